// Bootstrap::init (registration with the root, joining this process's LocalJob) and the Bootstrap
// of one rank: a thin handle on the LocalJob it shares with the other ranks of its process.
//
// Threads: none of its own (see local_job.h for how waits poll, yield and end).
#include "bootstrap/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/local_job.h"
#include "bootstrap/root_service.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id_internal.h"
#include "bootstrap/wire.h"
#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {
namespace {

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

class LocalBootstrap final : public Bootstrap {
 public:
  LocalBootstrap(int rank, int nranks, std::shared_ptr<LocalJob> job)
      : rank_(rank), nranks_(nranks), job_(std::move(job)) {}
  ~LocalBootstrap() override { job_->detach(rank_); }

  int rank() const override { return rank_; }
  int nranks() const override { return nranks_; }
  const std::string& hostName(int rank) const override { return job_->hostName(rank); }
  Status allGather(void* data, size_t bytesPerRank, Deadline deadline) override {
    CC_CHECK(checkCall(rank_, "allgather"));
    if (nranks_ == 1) return kOk;
    return stoppable(
        [&](const std::atomic<bool>& stop) { return job_->allGather(rank_, data, bytesPerRank, deadline, stop); });
  }
  Status barrier(Deadline deadline) override {
    std::vector<char> bytes(nranks_, 0);
    return allGather(bytes.data(), 1, deadline);
  }
  Status send(int peer, uint64_t tag, const void* data, size_t size, Deadline deadline) override {
    CC_CHECK(checkCall(peer, "send"));
    return stoppable(
        [&](const std::atomic<bool>& stop) { return job_->send(rank_, peer, tag, data, size, deadline, stop); });
  }
  Status recv(int peer, uint64_t tag, void* data, size_t size, Deadline deadline) override {
    CC_CHECK(checkCall(peer, "recv"));
    return stoppable(
        [&](const std::atomic<bool>& stop) { return job_->recv(rank_, peer, tag, data, size, deadline, stop); });
  }
  void abort() override {
    aborted_.store(true, std::memory_order_release);
    interrupt();
  }
  void interrupt() override {
    {
      std::lock_guard<std::mutex> lock(callsMu_);
      interrupted_ = true;
      for (std::atomic<bool>* stop : calls_) stop->store(true, std::memory_order_release);
    }
    job_->wake(rank_);
  }
  void resume() override {
    std::lock_guard<std::mutex> lock(callsMu_);
    interrupted_ = false;
  }

 private:
  // Runs one call with a stop flag of its own, listed while it runs so that interrupt() can set it.
  // A call that starts after abort(), or while interrupted, is stopped from the start.
  template <class Call>
  Status stoppable(Call call) {
    std::atomic<bool> stop{false};
    {
      std::lock_guard<std::mutex> lock(callsMu_);
      stop.store(interrupted_ || aborted_.load(std::memory_order_acquire), std::memory_order_relaxed);
      calls_.push_back(&stop);
    }
    const Status s = call(stop);
    std::lock_guard<std::mutex> lock(callsMu_);
    std::erase(calls_, &stop);
    return s;
  }

  Status checkCall(int peer, const char* call) const {
    if (aborted_.load(std::memory_order_acquire))
      return CC_ERROR(Status::kRemoteError, "bootstrap: rank %d: %s after the bootstrap was aborted", rank_, call);
    if (peer < 0 || peer >= nranks_)
      return CC_ERROR(Status::kInvalidArgument, "bootstrap: rank %d: %s with peer %d, which is not in [0, %d)", rank_,
                      call, peer, nranks_);
    return kOk;
  }

  int rank_;
  int nranks_;
  std::shared_ptr<LocalJob> job_;
  std::atomic<bool> aborted_{false};
  std::mutex callsMu_;
  std::vector<std::atomic<bool>*> calls_;  // the stop flags of the calls running now
  bool interrupted_ = false;               // between interrupt() and resume()
};

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

Status registerWithRoot(const UniqueIdData& id, const SocketAddress& root, int rank, int nranks,
                        const SocketAddress& self, Deadline deadline, std::vector<Peer>* out) {
  const std::string rootStr = root.toString();
  // A root in this process that fails may have no descriptor left to answer with: watch it directly.
  std::shared_ptr<const LocalRootFailure> local = watchLocalRoot(root);
  const std::atomic<bool>* rootFailed = local ? &local->failed : nullptr;
  Socket s;
  IoStatus io = Socket::connect(root, deadline, rootFailed, &s);
  if (io.code == IoCode::kAborted) return CC_ERROR(local->code, "%s", local->sentence.c_str());
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
  io = s.sendAll(&m, sizeof(m), deadline, rootFailed);
  wire::ReplyHeader h{};
  if (io.ok()) io = s.recvAll(&h, sizeof(h), deadline, rootFailed);
  if (io.code == IoCode::kAborted) return CC_ERROR(local->code, "%s", local->sentence.c_str());
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

  std::shared_ptr<LocalJob> job;
  CC_CHECK(LocalJob::acquire(id, root, rank, &job));
  std::vector<Peer> peers;
  CC_CHECK(registerWithRoot(id, root, rank, nranks, job->address(), deadline, &peers));
  CC_CHECK(job->attach(rank, std::move(peers)));
  CC_INFO(kSubsysBootstrap, "bootstrap: rank %d of %d ready (its process listens on %s)", rank, nranks,
          job->address().toString().c_str());
  *out = std::make_unique<LocalBootstrap>(rank, nranks, std::move(job));
  return kOk;
}

}  // namespace collcomm::detail
