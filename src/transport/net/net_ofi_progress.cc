// The OFI backend's data path: requests, isend/irecv/test over tagged messages, and the control
// messages that tell one end of a connection about the other (farewell, goodbye, probes).
//
// Departures: reliable datagrams have no connection to break, so each side says goodbye (a control
// message) as it closes, and a side waiting on a request probes its peer now and then (kProbeEvery):
// a send to an endpoint that no longer exists fails, so a peer that died is found within a few
// probes, and one that closed is found by its goodbye. rxm over tcp fails a probe only when it is in
// flight as the peer's socket breaks; after that rxm reconnects for each new one, is refused, and
// refuses the post with -FI_EAGAIN every time, so a probe refused for kProbeRefusedFor means the
// peer is gone too (a live peer's connection is set up already and takes a 16-byte control message
// at once). The shm provider reports sends to a dead process as done: it never notices one. A
// goodbye travels behind the peer's last messages (send-after-send order), so a receive those
// messages match still completes; the comm fails only once a poll after the goodbye finds nothing
// more (kEmptyPollsAfterGoodbye).
//
// Tier: the proxy's data path. isend/irecv post one libfabric operation; test reads the comm's
// completion queue (no syscall for providers with manual progress beyond what the provider makes;
// no allocation, no lock), and reads the clock to pace the probes.
#include <cstring>
#include <string>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"
#include "transport/net/net_ofi_wire.h"

namespace collcomm::detail::netofi {
namespace {

constexpr auto kProbeEvery = std::chrono::milliseconds(500);
constexpr auto kProbeRefusedFor = std::chrono::seconds(2);
constexpr int kEmptyPollsAfterGoodbye = 2;
// How long closing a comm waits for its goodbye (and a farewell before it) to leave.
constexpr auto kGoodbyeWait = std::chrono::milliseconds(100);
constexpr int kCqBatch = 16;

void* selfDesc(Comm* comm) { return comm->selfMr != nullptr ? fi_mr_desc(comm->selfMr->mr) : nullptr; }

const char* side(const Comm* comm) { return comm->isSend ? "to" : "from"; }

// The connection failed for a reason other than the peer leaving: a sentence at WARN.
Status failComm(Comm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    return CC_ERROR(Status::kRemoteError, "net/ofi: connection %s %s: %s", side(comm), comm->peerName.c_str(),
                    what.c_str());
  }
  return Status::kRemoteError;
}

// The peer left (closed its end, or its endpoint is gone): how peers leave, so INFO only.
Status failClosed(Comm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    CC_INFO(kSubsysNet, "net/ofi: connection %s %s: %s%s", side(comm), comm->peerName.c_str(), what.c_str(),
            comm->haveFarewell ? " after leaving a farewell" : "");
  }
  return Status::kRemoteError;
}

void postCtrlRecv(Comm* comm) {
  if (comm->ctrlRecv.posted) return;
  const ssize_t rc = fi_trecv(comm->ep.ep, &comm->ctrlRecv.msg, sizeof(CtrlMsg), selfDesc(comm), FI_ADDR_UNSPEC,
                              ctrlTag(comm->key), 0, &comm->ctrlRecv.ctx);
  comm->ctrlRecv.posted = rc == 0;  // -FI_EAGAIN: again at the next poll
}

// Posts a control message (best effort: false when it could not be posted now). A farewell
// completes only once the peer's provider holds it (FI_DELIVERY_COMPLETE), so that the close after
// it cannot outrun it: a receiver leaves a farewell when it fails mid-operation, while its sender
// may still be sending, and closing with those bytes unread resets the connection, upon which
// libfabric's own tcp endpoints (1.18 on) drop what had arrived unread. Goodbyes and probes need no
// such wait. A provider that refuses the flag gets a plain send.
bool postCtrl(Comm* comm, CtrlOp* op, CtrlKind kind, uint32_t word) {
  if (op->posted || comm->peer == FI_ADDR_UNSPEC) return false;
  op->msg = CtrlMsg{kCtrlMagic, kind, word, 0};
  iovec iov{&op->msg, sizeof(CtrlMsg)};
  void* desc = selfDesc(comm);
  fi_msg_tagged m{};
  m.msg_iov = &iov;
  m.desc = &desc;
  m.iov_count = 1;
  m.addr = comm->peer;
  m.tag = ctrlTag(comm->key);
  m.context = &op->ctx;
  const uint64_t delivered = kind == CtrlKind::kFarewell ? FI_DELIVERY_COMPLETE : 0;
  ssize_t rc = fi_tsendmsg(comm->ep.ep, &m, FI_COMPLETION | delivered);
  if (rc == -FI_EBADFLAGS && delivered != 0) rc = fi_tsendmsg(comm->ep.ep, &m, FI_COMPLETION);
  op->posted = rc == 0;
  return op->posted;
}

void peerLeft(Comm* comm, const std::string& why) {
  if (comm->peerLeft) return;
  comm->peerLeft = true;
  comm->emptyPollsSinceLeft = 0;
  comm->leftWhy = why;
}

void finish(Request* r) {
  r->done = true;
  if (r->autoMr != nullptr) {
    deregisterMr(&r->comm->ep, r->autoMr);
    r->autoMr = nullptr;
  }
}

void completed(Comm* comm, const fi_cq_tagged_entry& e) {
  void* ctx = e.op_context;
  if (ctx == &comm->helloCtx) {
    comm->helloPosted = false;
  } else if (ctx == &comm->ctrlRecv.ctx) {
    comm->ctrlRecv.posted = false;
    const CtrlMsg& m = comm->ctrlRecv.msg;
    if (e.len == sizeof(CtrlMsg) && m.magic == kCtrlMagic) {
      if (m.kind == CtrlKind::kFarewell) {
        comm->haveFarewell = true;
        comm->farewellWord = m.word;
      } else if (m.kind == CtrlKind::kGoodbye) {
        peerLeft(comm, "the peer closed the connection");
      }
    }
    postCtrlRecv(comm);
  } else if (ctx == &comm->farewellOp.ctx) {
    comm->farewellOp.posted = false;
  } else if (ctx == &comm->goodbyeOp.ctx) {
    comm->goodbyeOp.posted = false;
  } else if (ctx == &comm->probeOp.ctx) {
    comm->probeOp.posted = false;
  } else {
    auto* r = static_cast<Request*>(ctx);
    if (!comm->isSend) r->size = e.len;
    finish(r);
  }
}

Status failed(Comm* comm, const fi_cq_err_entry& err) {
  void* ctx = err.op_context;
  const int code = err.err;
  std::string what = fiError(code);
  if (err.prov_errno != 0 && comm->ep.ep != nullptr) {
    char buf[160] = {};
    const char* p = fi_cq_strerror(comm->ep.cq, err.prov_errno, err.err_data, buf, sizeof(buf));
    if (p != nullptr && *p != '\0') what += std::string("; ") + p;
  }
  if (ctx == &comm->ctrlRecv.ctx) {
    comm->ctrlRecv.posted = false;
    if (code != FI_ECANCELED) postCtrlRecv(comm);  // a truncated stranger's message: keep listening
    return kOk;
  }
  if (ctx == &comm->farewellOp.ctx || ctx == &comm->goodbyeOp.ctx || ctx == &comm->probeOp.ctx) {
    static_cast<CtrlOp*>(ctx)->posted = false;
    if (code != FI_ECANCELED) peerLeft(comm, "the peer is gone (" + what + ")");
    return kOk;
  }
  if (ctx == &comm->helloCtx) {
    comm->helloPosted = false;
    return failClosed(comm, "the hello did not reach the peer (" + what + ")");
  }
  auto* r = static_cast<Request*>(ctx);
  if (code == FI_ECANCELED) return kOk;
  if (code == FI_ETRUNC && !comm->isSend) {
    // Providers differ in what they report of the message (rxm: nothing).
    const size_t bytes = err.len + err.olen;
    const std::string msg =
        bytes > r->capacity ? "a message of " + std::to_string(bytes) + " bytes" : "a larger message";
    return failComm(comm, msg + " arrived for a buffer of " + std::to_string(r->capacity) + " bytes (tag " +
                              std::to_string(r->tag) + ")");
  }
  // A send or receive that fails on a reliable endpoint: the peer is unreachable, which is how a
  // peer that left looks.
  return failClosed(comm, std::string(comm->isSend ? "a send" : "a receive") + " failed: " + what);
}

Request* newRequest(Comm* comm) {
  if (comm->inFlight >= kNetMaxRequests) return nullptr;
  for (Request& r : comm->reqs) {
    if (r.used) continue;
    r.used = true;
    r.done = false;
    r.comm = comm;
    r.size = 0;
    r.autoMr = nullptr;
    comm->inFlight++;
    return &r;
  }
  return nullptr;
}

void release(Request* r) {
  if (r->autoMr != nullptr) {
    deregisterMr(&r->comm->ep, r->autoMr);
    r->autoMr = nullptr;
  }
  r->used = false;
  r->comm->inFlight--;
}

// Probes the peer every kProbeEvery; a peer that refused every probe for kProbeRefusedFor left. A
// probe still in flight is no refusal: behind a live peer that does not read yet (its process
// elsewhere, its proxy asleep) the stream fills and the probe waits; only a post refused outright
// counts.
void maybeProbe(Comm* comm) {
  if (comm->probeOp.posted || comm->peerLeft || comm->failed) return;
  const auto now = Clock::now();
  if (now - comm->lastProbe < kProbeEvery) return;
  comm->lastProbe = now;
  if (postCtrl(comm, &comm->probeOp, CtrlKind::kProbe, 0)) {
    comm->probeRefusedSince = Clock::time_point{};
  } else if (comm->probeRefusedSince == Clock::time_point{}) {
    comm->probeRefusedSince = now;
  } else if (now - comm->probeRefusedSince >= kProbeRefusedFor) {
    peerLeft(comm, "the peer is gone (it has refused every probe for 2 s)");
  }
}

// Status of a comm whose request is not done, after a read of its queue that found gotAny: probes
// the peer now and then, and fails the comm once its peer left and nothing more came.
Status checkPeer(Comm* comm, bool gotAny) {
  maybeProbe(comm);
  if (comm->failed) return Status::kRemoteError;
  if (!comm->peerLeft) return kOk;
  comm->emptyPollsSinceLeft = gotAny ? 0 : comm->emptyPollsSinceLeft + 1;
  if (comm->emptyPollsSinceLeft < kEmptyPollsAfterGoodbye) return kOk;
  return failClosed(comm, comm->leftWhy);
}

Status pollCqCounting(Comm* comm, int* got) {
  *got = 0;
  comm->epoch++;
  postCtrlRecv(comm);
  for (;;) {
    fi_cq_tagged_entry e[kCqBatch];
    const ssize_t n = fi_cq_read(comm->ep.cq, e, kCqBatch);
    if (n == -FI_EAGAIN) return kOk;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(comm->ep.cq, &err, 0) < 0) return kOk;
      ++*got;
      CC_CHECK(failed(comm, err));
      continue;
    }
    if (n < 0) return failComm(comm, "reading completions failed: " + fiError(static_cast<int>(n)));
    for (ssize_t i = 0; i < n; ++i) completed(comm, e[i]);
    *got += static_cast<int>(n);
    if (n < kCqBatch) return kOk;
  }
}

}  // namespace

Status pollCq(Comm* comm) {
  int got = 0;
  return pollCqCounting(comm, &got);
}

Status startComm(Comm* comm) {
  comm->lastProbe = Clock::now();
  postCtrlRecv(comm);
  return kOk;
}

Status ofiIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request) {
  auto* comm = static_cast<Comm*>(sendComm);
  *request = nullptr;
  if (comm->failed) return Status::kRemoteError;
  if (comm->peerLeft) return failClosed(comm, comm->leftWhy);
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  void* buf = const_cast<void*>(data);
  void* desc = nullptr;
  Status s = descFor(&comm->ep, buf, size, static_cast<Mr*>(mhandle), &desc, &r->autoMr);
  if (!isOk(s)) {
    release(r);
    return s;
  }
  r->size = size;
  r->tag = tag;
  const ssize_t rc = fi_tsend(comm->ep.ep, buf, size, desc, comm->peer, dataTag(comm->key, tag), &r->ctx);
  if (rc == -FI_EAGAIN) {
    // The provider needs progress; the caller tries again. A peer that left may have every post
    // refused this way (libfabric 1.18's tcp tries to connect again for each), so the peer is
    // checked here too, as in ofiTest.
    release(r);
    int got = 0;
    CC_CHECK(pollCqCounting(comm, &got));
    return checkPeer(comm, got != 0);
  }
  if (rc != 0) {
    release(r);
    return failComm(comm,
                    "posting a send of " + std::to_string(size) + " bytes failed: " + fiError(static_cast<int>(rc)));
  }
  *request = r;
  return kOk;
}

Status ofiIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                void** request) {
  auto* comm = static_cast<Comm*>(recvComm);
  *request = nullptr;
  if (n != 1) return CC_ERROR(Status::kInternalError, "net/ofi: irecv takes one buffer, not %d", n);
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  void* desc = nullptr;
  Status s = descFor(&comm->ep, data[0], sizes[0], mhandles != nullptr ? static_cast<Mr*>(mhandles[0]) : nullptr, &desc,
                     &r->autoMr);
  if (!isOk(s)) {
    release(r);
    return s;
  }
  r->capacity = sizes[0];
  r->tag = tags[0];
  const ssize_t rc =
      fi_trecv(comm->ep.ep, data[0], sizes[0], desc, FI_ADDR_UNSPEC, dataTag(comm->key, tags[0]), 0, &r->ctx);
  if (rc == -FI_EAGAIN) {
    release(r);
    return pollCq(comm);
  }
  if (rc != 0) {
    release(r);
    return failComm(comm, "posting a receive failed: " + fiError(static_cast<int>(rc)));
  }
  *request = r;
  return kOk;
}

// One completion queue read completes every request of the comm that is done, so a caller testing
// several requests in turn (the proxy tests the oldest of each kind every round) needs one read per
// round: a test reads the queue when this request was already tested since the comm's last read (a
// new round, or a caller waiting on it alone); otherwise it reports what that read found. For tcp
// a read is a poll() of the comm's sockets and more; the proxy used to make one per request tested.
Status ofiTest(void* request, bool* done, size_t* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* comm = r->comm;
  *done = false;
  if (!r->done) {
    if (comm->failed) return Status::kRemoteError;
    if (r->seen != comm->epoch) {
      r->seen = comm->epoch;
      return kOk;
    }
    int got = 0;
    const Status s = pollCqCounting(comm, &got);
    r->seen = comm->epoch;
    // A request that completed is reported even if the connection failed after it.
    if (!r->done) {
      if (!isOk(s)) return s;
      return checkPeer(comm, got != 0);
    }
  }
  *done = true;
  if (sizes != nullptr) sizes[0] = r->size;
  release(r);
  return kOk;
}

Status ofiFarewell(void* recvComm, uint32_t word) {
  auto* comm = static_cast<Comm*>(recvComm);
  if (!comm->failed) postCtrl(comm, &comm->farewellOp, CtrlKind::kFarewell, word);
  return kOk;
}

bool ofiPeerFarewell(void* sendComm, uint32_t* word) {
  auto* comm = static_cast<Comm*>(sendComm);
  if (!comm->haveFarewell) return false;
  *word = comm->farewellWord;
  return true;
}

void destroyComm(Comm* comm) {
  if (comm == nullptr) return;
  if (!comm->failed && !comm->peerLeft && comm->peer != FI_ADDR_UNSPEC &&
      postCtrl(comm, &comm->goodbyeOp, CtrlKind::kGoodbye, 0)) {
    // Setup tier: a short bounded wait so the goodbye (and a farewell before it) leave before the
    // endpoint closes; without it the peer finds out from a probe instead.
    const auto start = Clock::now();
    const auto until = start + kGoodbyeWait;
    while ((comm->goodbyeOp.posted || comm->farewellOp.posted) && !comm->failed && Clock::now() < until)
      (void)pollCq(comm);
    CC_INFO(kSubsysNet, "net/ofi: closing the connection %s %s: its goodbye %s after %.1f ms", side(comm),
            comm->peerName.c_str(),
            comm->goodbyeOp.posted || comm->farewellOp.posted ? (comm->failed ? "failed" : "had not left") : "left",
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  for (Request& r : comm->reqs)
    if (r.autoMr != nullptr) comm->ep.owned.push_back(r.autoMr);
  closeEndpoint(&comm->ep);  // cancels what is still posted, then closes the registrations
  delete comm;
}

}  // namespace collcomm::detail::netofi
