// Bootstrap::init (registration with the root, the ring connection) and the socket-based
// Bootstrap: allGather and barrier over the ring, tagged send/recv over per-peer connections.
//
// Threads: none of its own. Every wait is a loop of Inbox::poll slices of at most kAbortPollMs, so
// abort() (an atomic flag) is seen within ~50 ms and incoming messages are drained while waiting.
#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bootstrap/inbox.h"
#include "bootstrap/root_service.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id_internal.h"
#include "bootstrap/wire.h"
#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {
namespace {

struct Peer {
  SocketAddress addr;
  std::string host;
};

int pollSliceMs(const Deadline& d) { return std::clamp(d.remainingMs(), 1, kAbortPollMs); }

Status statusFromWire(int32_t s) {
  switch (static_cast<Status>(s)) {
    case Status::kSystemError:
    case Status::kInternalError:
    case Status::kInvalidArgument:
    case Status::kInvalidUsage:
    case Status::kRemoteError:
    case Status::kTimeout:
      return static_cast<Status>(s);
    default:
      return Status::kInternalError;
  }
}

class SocketBootstrap final : public Bootstrap {
 public:
  SocketBootstrap(int rank, int nranks, const uint64_t secret[2], std::vector<Peer> peers, Socket listener)
      : rank_(rank),
        nranks_(nranks),
        peers_(std::move(peers)),
        inbox_(std::move(listener), secret, rank, nranks),
        out_(nranks) {
    secret_[0] = secret[0];
    secret_[1] = secret[1];
  }

  Status connectRing(Deadline deadline);

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const std::string& hostName(int rank) const override { return peers_[rank].host; }
  Status allGather(void* data, size_t bytesPerRank, Deadline deadline) override;
  Status barrier(Deadline deadline) override;
  Status send(int peer, uint64_t tag, const void* data, size_t size, Deadline deadline) override;
  Status recv(int peer, uint64_t tag, void* data, size_t size, Deadline deadline) override;
  void abort() override { aborted_.store(true, std::memory_order_release); }

 private:
  int next() const { return (rank_ + 1) % nranks_; }
  int prev() const { return (rank_ + nranks_ - 1) % nranks_; }
  std::string who(int peer) const { return "rank " + std::to_string(peer) + " (host " + peers_[peer].host + ")"; }
  bool isAborted() const { return aborted_.load(std::memory_order_acquire); }
  // The one sentence for a failed wait: `op` is what this rank was doing ("waiting for allgather
  // data"), `dir` "from" or "to" `peer`.
  Status ioFailure(const IoStatus& s, int peer, const std::string& op, const char* dir);
  Status checkCall(int peer, const char* call);
  wire::HelloMsg hello(wire::ConnKind kind) const;
  Status ringExchange(const char* sendBuf, char* recvBuf, size_t bytes, Deadline deadline);

  int rank_;
  int nranks_;
  uint64_t secret_[2];
  std::vector<Peer> peers_;
  Inbox inbox_;
  Socket ringOut_;           // to rank+1
  Socket ringIn_;            // from rank-1
  std::vector<Socket> out_;  // p2p connections this rank opened, per peer
  std::atomic<bool> aborted_{false};
};

Status SocketBootstrap::ioFailure(const IoStatus& s, int peer, const std::string& op, const char* dir) {
  switch (s.code) {
    case IoCode::kOk:
      return kOk;
    case IoCode::kAborted:
      return CC_ERROR(Status::kRemoteError, "bootstrap: rank %d aborted while %s", rank_, op.c_str());
    case IoCode::kTimeout:
      return CC_ERROR(Status::kTimeout,
                      "bootstrap: rank %d timed out %s %s %s%s%s; it may have died, be stuck or be slow "
                      "(COLLCOMM_TIMEOUT sets the deadline)",
                      rank_, op.c_str(), dir, who(peer).c_str(), s.err != 0 ? "; last attempt: " : "",
                      s.err != 0 ? strerror(s.err) : "");
    case IoCode::kClosed:
      return CC_ERROR(Status::kRemoteError,
                      "bootstrap: connection %s %s closed while %s%s%s%s; the process may have died", dir,
                      who(peer).c_str(), op.c_str(), s.err != 0 ? " (" : "", s.err != 0 ? strerror(s.err) : "",
                      s.err != 0 ? ")" : "");
    case IoCode::kError:
      break;
  }
  return CC_ERROR(Status::kSystemError, "bootstrap: rank %d: socket error %s %s while %s: %s", rank_, dir,
                  who(peer).c_str(), op.c_str(), strerror(s.err));
}

Status SocketBootstrap::checkCall(int peer, const char* call) {
  if (isAborted())
    return CC_ERROR(Status::kRemoteError, "bootstrap: rank %d: %s after the bootstrap was aborted", rank_, call);
  if (peer < 0 || peer >= nranks_)
    return CC_ERROR(Status::kInvalidArgument, "bootstrap: rank %d: %s with peer %d, which is not in [0, %d)", rank_,
                    call, peer, nranks_);
  return kOk;
}

wire::HelloMsg SocketBootstrap::hello(wire::ConnKind kind) const {
  wire::HelloMsg h{};
  h.magic = wire::kMagic;
  h.version = wire::kVersion;
  h.secret[0] = secret_[0];
  h.secret[1] = secret_[1];
  h.srcRank = rank_;
  h.kind = static_cast<uint32_t>(kind);
  return h;
}

Status SocketBootstrap::connectRing(Deadline deadline) {
  if (nranks_ == 1) return kOk;
  IoStatus s = Socket::connect(peers_[next()].addr, deadline, &aborted_, &ringOut_);
  CC_CHECK(ioFailure(s, next(), "connecting the ring", "to"));
  wire::HelloMsg h = hello(wire::ConnKind::kRing);
  CC_CHECK(ioFailure(ringOut_.sendAll(&h, sizeof(h), deadline, &aborted_), next(), "connecting the ring", "to"));
  for (;;) {
    ringIn_ = inbox_.takeRing();
    if (ringIn_.valid()) return kOk;
    if (deadline.expired()) return ioFailure({IoCode::kTimeout, 0}, prev(), "waiting for the ring connection", "from");
    inbox_.poll(nullptr, 0, pollSliceMs(deadline));
  }
}

// One ring step: sends and receives at once (a slot larger than the socket buffers would deadlock
// a send-then-receive), draining p2p traffic meanwhile.
Status SocketBootstrap::ringExchange(const char* sendBuf, char* recvBuf, size_t bytes, Deadline deadline) {
  size_t sent = 0, got = 0;
  for (;;) {
    if (sent < bytes)
      CC_CHECK(ioFailure(ringOut_.sendSome(sendBuf, bytes, &sent), next(), "sending allgather data", "to"));
    if (got < bytes)
      CC_CHECK(ioFailure(ringIn_.recvSome(recvBuf, bytes, &got), prev(), "waiting for allgather data", "from"));
    if (sent == bytes && got == bytes) return kOk;
    if (isAborted()) return ioFailure({IoCode::kAborted, 0}, prev(), "in allgather", "from");
    if (deadline.expired()) {
      return got < bytes ? ioFailure({IoCode::kTimeout, 0}, prev(), "waiting for allgather data", "from")
                         : ioFailure({IoCode::kTimeout, 0}, next(), "sending allgather data", "to");
    }
    pollfd fds[2];
    size_t n = 0;
    if (sent < bytes) fds[n++] = pollfd{ringOut_.fd(), POLLOUT, 0};
    if (got < bytes) fds[n++] = pollfd{ringIn_.fd(), POLLIN, 0};
    inbox_.poll(fds, n, pollSliceMs(deadline));
  }
}

Status SocketBootstrap::allGather(void* data, size_t bytesPerRank, Deadline deadline) {
  CC_CHECK(checkCall(rank_, "allgather"));
  char* base = static_cast<char*>(data);
  for (int step = 0; step < nranks_ - 1; ++step) {
    int sendSlot = (rank_ - step + nranks_) % nranks_;
    int recvSlot = (rank_ - step - 1 + nranks_) % nranks_;
    CC_CHECK(ringExchange(base + sendSlot * bytesPerRank, base + recvSlot * bytesPerRank, bytesPerRank, deadline));
  }
  return kOk;
}

Status SocketBootstrap::barrier(Deadline deadline) {
  std::vector<char> bytes(nranks_, 0);
  return allGather(bytes.data(), 1, deadline);
}

Status SocketBootstrap::send(int peer, uint64_t tag, const void* data, size_t size, Deadline deadline) {
  CC_CHECK(checkCall(peer, "send"));
  if (peer == rank_) {
    inbox_.deliverLocal(tag, data, size);
    return kOk;
  }
  char op[96];
  snprintf(op, sizeof(op), "sending a message (tag %llu, %zu bytes)", static_cast<unsigned long long>(tag), size);
  Socket& s = out_[peer];
  bool fresh = !s.valid();
  if (fresh) CC_CHECK(ioFailure(Socket::connect(peers_[peer].addr, deadline, &aborted_, &s), peer, op, "to"));
  wire::HelloMsg h = hello(wire::ConnKind::kP2p);
  wire::MsgHeader header{tag, size};
  const struct {
    const void* p;
    size_t n;
  } pieces[] = {{&h, fresh ? sizeof(h) : 0}, {&header, sizeof(header)}, {data, size}};
  for (const auto& piece : pieces) {
    size_t done = 0;
    for (;;) {
      IoStatus io = s.sendSome(piece.p, piece.n, &done);
      if (io.ok() && done == piece.n) break;
      if (io.ok() && isAborted()) io = {IoCode::kAborted, 0};
      if (io.ok() && deadline.expired()) io = {IoCode::kTimeout, 0};
      if (!io.ok()) {
        s.close();  // a partly sent message leaves the stream unusable; the next send reconnects
        return ioFailure(io, peer, op, "to");
      }
      pollfd f{s.fd(), POLLOUT, 0};
      inbox_.poll(&f, 1, pollSliceMs(deadline));
    }
  }
  return kOk;
}

Status SocketBootstrap::recv(int peer, uint64_t tag, void* data, size_t size, Deadline deadline) {
  CC_CHECK(checkCall(peer, "recv"));
  char op[96];
  snprintf(op, sizeof(op), "waiting for a message (tag %llu)", static_cast<unsigned long long>(tag));
  std::vector<char> msg;
  std::string why;
  for (;;) {
    if (inbox_.take(peer, tag, &msg)) {
      if (msg.size() != size)
        return CC_ERROR(Status::kInternalError,
                        "bootstrap: rank %d expected %zu bytes from %s with tag %llu, but the message has %zu bytes",
                        rank_, size, who(peer).c_str(), static_cast<unsigned long long>(tag), msg.size());
      if (size != 0) memcpy(data, msg.data(), size);
      return kOk;
    }
    if (peer != rank_ && inbox_.peerGone(peer, &why))
      return CC_ERROR(Status::kRemoteError,
                      "bootstrap: connection from %s closed while %s%s%s%s; the process may have died",
                      who(peer).c_str(), op, why.empty() ? "" : " (", why.c_str(), why.empty() ? "" : ")");
    if (isAborted()) return ioFailure({IoCode::kAborted, 0}, peer, op, "from");
    if (deadline.expired()) return ioFailure({IoCode::kTimeout, 0}, peer, op, "from");
    inbox_.poll(nullptr, 0, pollSliceMs(deadline));
  }
}

// ---- init

// With COLLCOMM_COMM_ID naming this id's root, rank 0 serves the root itself when the address is
// one of its host's.
Status maybeStartFixedRoot(const UniqueIdData& id, const SocketAddress& root) {
  std::string commId;
  SocketAddress fixed;
  CC_CHECK(parseCommIdParam(&commId, &fixed));
  if (commId.empty() || !(fixed == root)) return kOk;
  uint64_t secret[2];
  fixedIdSecret(commId, secret);
  if (!wire::sameSecret(secret, id.secret)) return kOk;
  bool started = false;
  CC_CHECK(startRootServiceAt(root, secret, static_cast<double>(paramInt(Param::kTimeout)), &started));
  if (started)
    CC_INFO(kSubsysBootstrap, "bootstrap: rank 0 serves the COLLCOMM_COMM_ID root at %s", root.toString().c_str());
  return kOk;
}

// A loopback root means a one-host job: listen on loopback too. Otherwise on the selected interface.
Status listenAddressFor(const SocketAddress& root, SocketAddress* out) {
  if (root.isLoopback()) {
    std::string why;
    if (!SocketAddress::parse(root.family() == AF_INET6 ? "[::1]:0" : "127.0.0.1:0", root.family(), out, &why))
      return CC_ERROR(Status::kSystemError, "bootstrap: no loopback address: %s", why.c_str());
    return kOk;
  }
  std::vector<NetInterface> ifs;
  CC_CHECK(findInterfaces(1, &ifs));
  *out = ifs[0].addr;
  return kOk;
}

Status registerWithRoot(const UniqueIdData& id, const SocketAddress& root, int rank, int nranks,
                        const SocketAddress& self, Deadline deadline, std::vector<Peer>* out) {
  const std::string rootStr = root.toString();
  Socket s;
  IoStatus io = Socket::connect(root, deadline, nullptr, &s);
  if (io.code == IoCode::kTimeout)
    return CC_ERROR(Status::kTimeout,
                    "bootstrap: rank %d could not reach the root at %s before its deadline (%s); is the process that "
                    "called ccGetUniqueId still running, and is that address reachable from this host?",
                    rank, rootStr.c_str(), io.describe().c_str());
  if (!io.ok())
    return CC_ERROR(Status::kSystemError, "bootstrap: rank %d cannot connect to the root at %s: %s", rank,
                    rootStr.c_str(), io.describe().c_str());
  wire::RegisterMsg m{};
  m.magic = wire::kMagic;
  m.version = wire::kVersion;
  m.secret[0] = id.secret[0];
  m.secret[1] = id.secret[1];
  m.rank = rank;
  m.nranks = nranks;
  memcpy(m.self.addr, self.sa(), self.len());
  m.self.addrLen = self.len();
  gethostname(m.self.host, sizeof(m.self.host) - 1);
  m.self.pid = static_cast<int32_t>(getpid());
  m.waitMs = deadline.remainingMs();
  io = s.sendAll(&m, sizeof(m), deadline, nullptr);
  wire::ReplyHeader h{};
  if (io.ok()) io = s.recvAll(&h, sizeof(h), deadline, nullptr);
  if (io.code == IoCode::kClosed)
    return CC_ERROR(Status::kRemoteError,
                    "bootstrap: the root at %s closed rank %d's registration without an answer; the ccUniqueId may "
                    "belong to another job (wrong secret) or that job's root has already finished",
                    rootStr.c_str(), rank);
  if (io.code == IoCode::kTimeout)
    return CC_ERROR(Status::kTimeout,
                    "bootstrap: rank %d timed out waiting for the root at %s to answer its registration", rank,
                    rootStr.c_str());
  if (!io.ok())
    return CC_ERROR(Status::kSystemError, "bootstrap: rank %d: registration with the root at %s failed: %s", rank,
                    rootStr.c_str(), io.describe().c_str());
  if (h.magic != wire::kMagic)
    return CC_ERROR(Status::kRemoteError,
                    "bootstrap: %s answered rank %d's registration with something that is not a "
                    "collcomm root's answer",
                    rootStr.c_str(), rank);
  if (h.status != 0) {
    std::string text(std::min<uint64_t>(h.bytes, wire::kMaxReplyText), '\0');
    io = s.recvAll(text.data(), text.size(), deadline, nullptr);
    if (!io.ok()) text = "(the root's explanation was lost: " + io.describe() + ")";
    return CC_ERROR(statusFromWire(h.status), "%s", text.c_str());
  }
  if (h.bytes != nranks * sizeof(wire::PeerEntry))
    return CC_ERROR(Status::kInternalError, "bootstrap: the root at %s sent rank %d a table of %llu bytes for %d ranks",
                    rootStr.c_str(), rank, static_cast<unsigned long long>(h.bytes), nranks);
  std::vector<wire::PeerEntry> table(nranks);
  io = s.recvAll(table.data(), h.bytes, deadline, nullptr);
  if (!io.ok())
    return CC_ERROR(io.code == IoCode::kTimeout ? Status::kTimeout : Status::kRemoteError,
                    "bootstrap: rank %d: receiving the address table from the root at %s failed: %s", rank,
                    rootStr.c_str(), io.describe().c_str());
  std::vector<Peer> peers(nranks);
  for (int r = 0; r < nranks; ++r) {
    table[r].host[wire::kHostNameBytes - 1] = '\0';
    peers[r].host = table[r].host;
    if (table[r].addrLen > sizeof(table[r].addr) ||
        !SocketAddress::fromSockaddr(table[r].addr, table[r].addrLen, &peers[r].addr))
      return CC_ERROR(Status::kInternalError, "bootstrap: the root's table has no valid address for rank %d (host %s)",
                      r, table[r].host);
  }
  *out = std::move(peers);
  return kOk;
}

}  // namespace

Status Bootstrap::init(const UniqueIdData& id, int rank, int nranks, Deadline deadline,
                       std::unique_ptr<Bootstrap>* out) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return CC_ERROR(Status::kInvalidArgument, "bootstrap: rank %d is not in [0, nranks=%d)", rank, nranks);
  SocketAddress root;
  if (!uniqueIdLooksValid(id) || !rootAddressOf(id, &root))
    return CC_ERROR(Status::kInvalidArgument, "the ccUniqueId is not valid (was it made by ccGetUniqueId?)");
  if (rank == 0) CC_CHECK(maybeStartFixedRoot(id, root));

  SocketAddress listenAddr, bound;
  CC_CHECK(listenAddressFor(root, &listenAddr));
  Socket listener;
  IoStatus io = Socket::listen(listenAddr, &listener, &bound);
  if (!io.ok())
    return CC_ERROR(Status::kSystemError, "bootstrap: rank %d cannot listen on %s: %s", rank,
                    listenAddr.hostString().c_str(), io.describe().c_str());

  std::vector<Peer> peers;
  CC_CHECK(registerWithRoot(id, root, rank, nranks, bound, deadline, &peers));
  auto b = std::make_unique<SocketBootstrap>(rank, nranks, id.secret, std::move(peers), std::move(listener));
  CC_CHECK(b->connectRing(deadline));
  CC_INFO(kSubsysBootstrap, "bootstrap: rank %d of %d ready (listening on %s)", rank, nranks, bound.toString().c_str());
  *out = std::move(b);
  return kOk;
}

}  // namespace collcomm::detail
