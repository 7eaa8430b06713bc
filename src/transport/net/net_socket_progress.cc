// The socket backend's data path: requests, isend/irecv/test, and the caller's progress on the
// control socket (headers and inline payloads; chunks go to the helper threads through postChunks).
//
// Data path costs: the sender writes all queued control parts (headers, inline payloads) with one
// sendmsg; the receiver reads the control socket through a staging buffer (a header and a small
// payload in one recv; a large payload straight into its buffer) and stops at the first short
// read; test progresses a comm once per round of its caller (see socketTest).
//
// Tier: the proxy's data path (non-blocking syscalls on the control socket; a mutex per helper
// thread to hand it chunks). Allocation: none per message, except that the request order and the
// helpers' chunk queues are std::deques, which take a new block now and then as they advance.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "bootstrap/socket.h"
#include "common/status.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_internal.h"
#include "transport/net/net_socket_wire.h"

namespace collcomm::detail::netsocket {
namespace {

constexpr int kMaxIov = 32;

bool chunked(const SocketComm* comm, size_t size) { return !comm->data.empty() && size > kInlineBytes; }

// Sends the control parts of every queued message (headers, inline payloads) with one sendmsg.
Status progressSend(SocketComm* comm) {
  iovec iov[kMaxIov];
  int n = 0;
  for (Request* r : comm->order) {
    if (r->stage != 0) continue;  // the unsent ones are the last ones posted
    if (n + 2 > kMaxIov) break;
    size_t off = r->ctrlDone;
    if (off < sizeof(MsgHeader)) {
      iov[n++] = iovec{reinterpret_cast<char*>(&r->hdr) + off, sizeof(MsgHeader) - off};
      off = 0;
    } else {
      off -= sizeof(MsgHeader);
    }
    if (r->inlinePayload && off < r->size) iov[n++] = iovec{r->data + off, r->size - off};
  }
  if (n == 0) return kOk;
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<size_t>(n);
  ssize_t sent;
  do {
    sent = ::sendmsg(comm->ctrl.fd(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return kOk;
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return failIo(comm, {IoCode::kClosed, err}, true);
    return failIo(comm, {IoCode::kError, err}, true);
  }
  size_t left = static_cast<size_t>(sent);
  for (Request* r : comm->order) {
    if (r->stage != 0) continue;
    const size_t total = sizeof(MsgHeader) + (r->inlinePayload ? r->size : 0);
    const size_t take = std::min(left, total - r->ctrlDone);
    r->ctrlDone += take;
    left -= take;
    if (r->ctrlDone < total) break;
    r->stage = 2;
    if (!r->inlinePayload) postChunks(comm, r);
  }
  return kOk;
}

// Receive side: reads the control socket into the staging buffer (headers, small payloads and
// whatever follows them, in one call); large inline payloads go straight into their buffers. A
// read that comes back short means the socket is drained: the round stops there, so an idle
// connection costs one recv per progress call.
Status recvIo(SocketComm* comm, const IoStatus& st) {
  if (st.code != IoCode::kClosed) return failComm(comm, st.describe());
  const bool boundary = comm->inReq == nullptr && comm->inHdrDone == 0 && comm->stageBegin == comm->stageEnd;
  return failClosed(comm, boundary
                              ? "the peer closed the connection after its last message"
                              : "the peer closed the connection in the middle of a message (" + st.describe() + ")");
}

// Refills the empty staging buffer; *drained when the read came back short.
Status fillStage(SocketComm* comm, bool* drained) {
  size_t got = 0;
  IoStatus st = readCtrl(comm, comm->stage.get(), kStageBytes, &got);
  if (!st.ok()) return recvIo(comm, st);
  comm->stageBegin = 0;
  comm->stageEnd = got;
  if (got < kStageBytes) *drained = true;
  return kOk;
}

size_t takeStaged(SocketComm* comm, void* dst, size_t want) {
  const size_t n = std::min(want, comm->stageEnd - comm->stageBegin);
  if (n == 0) return 0;  // dst may be null: a receive of 0 bytes into no buffer
  memcpy(dst, comm->stage.get() + comm->stageBegin, n);
  comm->stageBegin += n;
  return n;
}

Status progressRecv(SocketComm* comm) {
  bool drained = false;
  for (;;) {
    if (comm->inReq == nullptr) {
      while (comm->inHdrDone < sizeof(MsgHeader)) {
        if (comm->stageBegin == comm->stageEnd) {
          if (drained) return kOk;
          CC_CHECK(fillStage(comm, &drained));
          if (comm->stageBegin == comm->stageEnd) return kOk;
        }
        comm->inHdrDone += takeStaged(comm, reinterpret_cast<char*>(&comm->inHdr) + comm->inHdrDone,
                                      sizeof(MsgHeader) - comm->inHdrDone);
      }
      Request* m = nullptr;
      for (Request* r : comm->order)
        if (r->stage == 0 && r->tag == comm->inHdr.tag) {
          m = r;
          break;
        }
      if (m == nullptr) return kOk;  // waits for a matching irecv
      if (comm->inHdr.size > m->capacity)
        return failComm(comm, "a message of " + std::to_string(comm->inHdr.size) + " bytes arrived for a buffer of " +
                                  std::to_string(m->capacity) + " bytes (tag " + std::to_string(m->tag) + ")");
      m->size = comm->inHdr.size;
      if (chunked(comm, m->size)) {
        postChunks(comm, m);
        m->stage = 2;
        comm->inHdrDone = 0;
        continue;
      }
      m->stage = 1;
      m->ctrlDone = 0;
      comm->inReq = m;
    }
    Request* r = comm->inReq;
    r->ctrlDone += takeStaged(comm, r->data + r->ctrlDone, r->size - r->ctrlDone);
    while (r->ctrlDone < r->size) {
      if (drained) return kOk;
      const size_t left = r->size - r->ctrlDone;
      if (left >= kDirectBytes) {
        const size_t before = r->ctrlDone;
        IoStatus st = readCtrl(comm, r->data + r->ctrlDone, left, &r->ctrlDone);
        if (!st.ok()) return recvIo(comm, st);
        if (r->ctrlDone - before < left) drained = true;
      } else {
        CC_CHECK(fillStage(comm, &drained));
        r->ctrlDone += takeStaged(comm, r->data + r->ctrlDone, left);
      }
    }
    r->stage = 2;
    comm->inReq = nullptr;
    comm->inHdrDone = 0;
  }
}

Status progress(SocketComm* comm) {
  comm->epoch++;
  if (comm->failed) return Status::kRemoteError;
  if (comm->breaking) return breakSend(comm, comm->breakWhy, false);
  if (const int err = comm->ioError.load(std::memory_order_acquire); err != 0) {
    if (err < 0 || err == ECONNRESET || err == EPIPE || err == ENOTCONN) {
      const std::string why = err < 0 ? std::string("the peer closed a data connection")
                                      : std::string("the peer closed a data connection (") + strerror(err) + ")";
      return comm->isSend ? breakSend(comm, why, false) : failClosed(comm, why);
    }
    return failComm(comm, std::string("data socket: ") + strerror(err));
  }
  return comm->isSend ? progressSend(comm) : progressRecv(comm);
}

Request* newRequest(SocketComm* comm) {
  if (comm->order.size() >= static_cast<size_t>(kNetMaxRequests)) return nullptr;
  for (Request& r : comm->reqs) {
    if (r.used) continue;
    r.used = true;
    r.comm = comm;
    r.stage = 0;
    r.ctrlDone = 0;
    r.seen = comm->epoch;
    r.pendingChunks.store(0, std::memory_order_relaxed);
    r.chunkFailed.store(false, std::memory_order_relaxed);
    comm->order.push_back(&r);
    return &r;
  }
  return nullptr;
}

bool complete(const Request* r) { return r->stage == 2 && r->pendingChunks.load(std::memory_order_acquire) == 0; }

}  // namespace

Status socketIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void*, void** request) {
  auto* comm = static_cast<SocketComm*>(sendComm);
  *request = nullptr;
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(const_cast<void*>(data));
  r->size = size;
  r->tag = tag;
  r->hdr = MsgHeader{tag, 0, size};
  r->inlinePayload = !chunked(comm, size);
  *request = r;
  const Status s = progress(comm);  // on its way at once
  r->seen = comm->epoch;
  return s;
}

Status socketIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void**,
                   void** request) {
  auto* comm = static_cast<SocketComm*>(recvComm);
  *request = nullptr;
  if (n != 1) return CC_ERROR(Status::kInternalError, "net/socket: irecv takes one buffer, not %d", n);
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(data[0]);
  r->capacity = sizes[0];
  r->tag = tags[0];
  *request = r;
  return kOk;  // the first test reads
}

// Progress: one progress call reads or writes for every request of the comm, so a caller testing
// several requests in turn (the proxy tests the oldest of each kind every round) needs one per
// round. A test progresses the comm when this request was already tested since the comm's last
// progress (a new round, or a caller waiting on it alone); otherwise it reports what the last one
// found. A repeated test of the same request always progresses.
Status socketTest(void* request, bool* done, size_t* sizes) {
  auto* r = static_cast<Request*>(request);
  SocketComm* comm = r->comm;
  *done = false;
  if (!complete(r)) {
    Status s = kOk;
    if (r->seen == comm->epoch) s = progress(comm);
    else if (comm->failed) s = Status::kRemoteError;
    r->seen = comm->epoch;
    // A request that completed is reported even if the stream broke after it (the peer closed
    // right after its last message): the caller lands what arrived before it learns of the break.
    if (!complete(r)) return s;
  }
  if (r->chunkFailed.load(std::memory_order_relaxed)) return comm->failed ? Status::kRemoteError : progress(comm);
  *done = true;
  if (sizes != nullptr) sizes[0] = r->size;
  for (auto it = comm->order.begin(); it != comm->order.end(); ++it)
    if (*it == r) {
      comm->order.erase(it);
      break;
    }
  r->used = false;
  return kOk;
}

}  // namespace collcomm::detail::netsocket
