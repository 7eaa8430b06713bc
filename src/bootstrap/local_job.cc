// LocalJob: mailboxes, allgather rounds, the process's sockets and the waits over all of them.
#include "bootstrap/local_job.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace collcomm::detail {
namespace {

// How long a sender blocked on a full socket waits between looks at the poller role.
constexpr int kSenderSliceMs = 5;
// Largest payload copied behind its header to go out in one send.
constexpr size_t kCoalesceBytes = 64 * 1024;

int pollSliceMs(const Deadline& d) { return std::clamp(d.remainingMs(), 1, kAbortPollMs); }

std::mutex& registryMu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
// Jobs that ranks of this process are still joining, by secret and root address.
std::map<std::string, std::weak_ptr<LocalJob>>& registry() {
  static auto* jobs = new std::map<std::string, std::weak_ptr<LocalJob>>;
  return *jobs;
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

}  // namespace

Status LocalJob::acquire(const UniqueIdData& id, const SocketAddress& root, int rank, std::shared_ptr<LocalJob>* out) {
  std::string key(reinterpret_cast<const char*>(id.secret), sizeof(id.secret));
  key += root.toString();
  std::lock_guard<std::mutex> guard(registryMu());
  auto& jobs = registry();
  std::erase_if(jobs, [](const auto& kv) { return kv.second.expired(); });
  if (auto it = jobs.find(key); it != jobs.end()) {
    if (auto job = it->second.lock()) {
      *out = std::move(job);
      return kOk;
    }
  }
  SocketAddress listenAddr, bound;
  CC_CHECK(listenAddressFor(root, &listenAddr));
  Socket listener;
  IoStatus io = Socket::listen(listenAddr, &listener, &bound);
  if (!io.ok())
    return CC_ERROR(Status::kSystemError, "bootstrap: rank %d cannot listen on %s: %s", rank,
                    listenAddr.hostString().c_str(), io.describe().c_str());
  auto job = std::make_shared<LocalJob>(key, id.secret, std::move(listener), bound);
  jobs[key] = job;
  *out = std::move(job);
  return kOk;
}

LocalJob::LocalJob(std::string key, const uint64_t secret[2], Socket listener, const SocketAddress& bound)
    : key_(std::move(key)), bound_(bound), listener_(std::move(listener)) {
  secret_[0] = secret[0];
  secret_[1] = secret[1];
}

LocalJob::~LocalJob() = default;

void LocalJob::unregister() {
  std::lock_guard<std::mutex> guard(registryMu());
  auto it = registry().find(key_);
  if (it == registry().end()) return;
  auto job = it->second.lock();
  if (job == nullptr || job.get() == this) registry().erase(it);
}

Status LocalJob::attach(int rank, std::vector<Peer> table) {
  std::unique_lock<std::mutex> lock(mu_);
  const int n = static_cast<int>(table.size());
  if (!tableSet_) {
    std::vector<SocketAddress> procAddr;
    procOf_.assign(n, -1);
    for (int r = 0; r < n; ++r) {
      auto it = std::find(procAddr.begin(), procAddr.end(), table[r].addr);
      procOf_[r] = static_cast<int>(it - procAddr.begin());
      if (it == procAddr.end()) {
        procAddr.push_back(table[r].addr);
        procRanks_.emplace_back();
      }
      procRanks_[procOf_[r]].push_back(r);
    }
    auto self = std::find(procAddr.begin(), procAddr.end(), bound_);
    if (self == procAddr.end())
      return CC_ERROR(Status::kInternalError, "bootstrap: the root's table does not hold rank %d's address %s", rank,
                      bound_.toString().c_str());
    selfProc_ = static_cast<int>(self - procAddr.begin());
    leader_ = procRanks_[selfProc_][0];
    mail_.resize(n);
    for (int r : procRanks_[selfProc_]) mail_[r] = std::make_unique<Mailbox>();
    const int procs = static_cast<int>(procRanks_.size());
    if (procs > 1) {
      int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (fd < 0)
        return CC_ERROR(Status::kSystemError, "bootstrap: rank %d: eventfd failed: %s", rank, strerror(errno));
      wakeFd_ = Socket(fd);
      inbox_ = std::make_unique<Inbox>(std::move(listener_), secret_, procOf_, selfProc_);
      rankLeft_.assign(n, 0);
      openFrom_.assign(procs, 0);
      procGone_.assign(procs, 0);
      procGoneWhy_.assign(procs, "");
      for (int p = 0; p < procs; ++p) out_.push_back(std::make_unique<OutLink>());
    } else {
      listener_.close();  // every rank lives here: nobody will connect
    }
    nranks_ = n;
    table_ = std::move(table);
    tableSet_ = true;
  } else if (n != nranks_) {
    return CC_ERROR(Status::kInternalError, "bootstrap: rank %d got a table of %d ranks; its process has one of %d",
                    rank, n, nranks_);
  }
  if (procOf_[rank] != selfProc_ || mail_[rank]->attached)
    return CC_ERROR(Status::kInternalError, "bootstrap: rank %d joined its process's part of the job twice", rank);
  mail_[rank]->attached = true;
  const bool complete = ++attached_ == static_cast<int>(procRanks_[selfProc_].size());
  lock.unlock();
  if (complete) unregister();  // a later job with the same id (COLLCOMM_COMM_ID) starts afresh
  return kOk;
}

void LocalJob::detach(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  mail_[rank]->gone = true;
  for (int r : procRanks_[selfProc_]) wakeLocked(r);
  // Tell the processes this one is connected to, without waiting: a link that is busy or whose
  // socket is full misses the notice, and its ranks then learn only when the process goes.
  for (size_t p = 0; p < out_.size(); ++p) {
    OutLink& link = *out_[p];
    if (link.busy || !link.sock.valid()) continue;
    const wire::MsgHeader left{rank, procRanks_[p][0], static_cast<uint32_t>(wire::Channel::kLeft), 0, 0, 0};
    size_t done = 0;
    IoStatus io = link.sock.sendSome(&left, sizeof(left), &done);
    if (!io.ok() || (done != 0 && done != sizeof(left))) link.sock.close();  // never leave half a header
  }
}

void LocalJob::wake(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  wakeLocked(rank);
}

void LocalJob::wakeLocked(int rank) {
  mail_[rank]->cv.notify_all();
  if (polling_ && pollerRank_ == rank) {
    const uint64_t one = 1;
    ssize_t ignored = write(wakeFd_.fd(), &one, sizeof(one));
    (void)ignored;  // the counter is saturated only if the poller is already due to wake
  }
}

std::string LocalJob::who(int rank) const {
  return "rank " + std::to_string(rank) + " (host " + table_[rank].host + ")";
}

Status LocalJob::ioFailure(int self, const IoStatus& s, int peer, const std::string& op, const char* dir) const {
  switch (s.code) {
    case IoCode::kOk:
      return kOk;
    case IoCode::kAborted:
      return CC_ERROR(Status::kRemoteError, "bootstrap: rank %d aborted while %s", self, op.c_str());
    case IoCode::kTimeout:
      return CC_ERROR(Status::kTimeout,
                      "bootstrap: rank %d timed out %s %s %s%s%s; it may have died, be stuck or be slow "
                      "(COLLCOMM_TIMEOUT sets the deadline)",
                      self, op.c_str(), dir, who(peer).c_str(), s.err != 0 ? "; last attempt: " : "",
                      s.err != 0 ? strerror(s.err) : "");
    case IoCode::kClosed:
      return CC_ERROR(Status::kRemoteError,
                      "bootstrap: connection %s %s closed while %s%s%s%s; the process may have died", dir,
                      who(peer).c_str(), op.c_str(), s.err != 0 ? " (" : "", s.err != 0 ? strerror(s.err) : "",
                      s.err != 0 ? ")" : "");
    case IoCode::kError:
      break;
  }
  return CC_ERROR(Status::kSystemError, "bootstrap: rank %d: socket error %s %s while %s: %s", self, dir,
                  who(peer).c_str(), op.c_str(), strerror(s.err));
}

bool LocalJob::goneLocked(int peer, std::string* why) const {
  const int p = procOf_[peer];
  if (p == selfProc_) {
    *why = "";
    return mail_[peer]->gone;
  }
  if (rankLeft_[peer]) {
    *why = "it left the job";
    return true;
  }
  if (openFrom_[p] != 0 || !procGone_[p]) return false;
  *why = procGoneWhy_[p];
  return true;
}

Status LocalJob::goneError(int self, int peer, const std::string& op) const {
  std::string why;
  (void)goneLocked(peer, &why);
  if (procOf_[peer] == selfProc_ || rankLeft_[peer])
    return CC_ERROR(Status::kRemoteError,
                    "bootstrap: %s left the job (its communicator was destroyed) while rank %d was %s; the thread "
                    "or process may have died",
                    who(peer).c_str(), self, op.c_str());
  return CC_ERROR(Status::kRemoteError,
                  "bootstrap: connection from %s closed while %s%s%s%s; the process may have died", who(peer).c_str(),
                  op.c_str(), why.empty() ? "" : " (", why.c_str(), why.empty() ? "" : ")");
}

void LocalJob::waitSlice(std::unique_lock<std::mutex>& lock, int self, pollfd* extra, int sliceMs) {
  if (inbox_ != nullptr && !polling_) {
    polling_ = true;
    pollerRank_ = self;
    lock.unlock();
    pollfd fds[2] = {pollfd{wakeFd_.fd(), POLLIN, 0}, pollfd{-1, 0, 0}};
    if (extra != nullptr) fds[1] = *extra;
    Inbox::Events ev;
    inbox_->poll(fds, extra != nullptr ? 2 : 1, sliceMs, &ev);
    if (fds[0].revents != 0) {
      uint64_t count;
      ssize_t ignored = read(wakeFd_.fd(), &count, sizeof(count));
      (void)ignored;
    }
    if (extra != nullptr) extra->revents = fds[1].revents;
    lock.lock();
    polling_ = false;
    pollerRank_ = -1;
    fileLocked(ev);
    // Hand the sockets to a rank that is still waiting.
    for (int r : procRanks_[selfProc_]) {
      if (r != self && mail_[r]->waiting) {
        mail_[r]->cv.notify_all();
        break;
      }
    }
    return;
  }
  if (extra != nullptr) {
    lock.unlock();
    ::poll(extra, 1, std::min(sliceMs, kSenderSliceMs));
    lock.lock();
    return;
  }
  Mailbox& me = *mail_[self];
  me.waiting = true;
  me.cv.wait_for(lock, std::chrono::milliseconds(sliceMs));
  me.waiting = false;
}

void LocalJob::fileLocked(Inbox::Events& ev) {
  for (int p : ev.opened) {
    ++openFrom_[p];
    procGone_[p] = 0;
  }
  for (Inbox::Message& m : ev.messages) {
    if (m.channel == wire::Channel::kLeft) {
      rankLeft_[m.src] = 1;
      for (int r : procRanks_[selfProc_]) wakeLocked(r);
      continue;
    }
    mail_[m.dst]->queues[{static_cast<uint32_t>(m.channel), m.src, m.tag}].push_back(std::move(m.payload));
    wakeLocked(m.dst);
  }
  for (auto& [p, why] : ev.lost) {
    if (--openFrom_[p] != 0) continue;
    procGone_[p] = 1;
    procGoneWhy_[p] = why;
    for (int r : procRanks_[selfProc_]) wakeLocked(r);
  }
}

template <class Ready, class Failed, class TimedOut>
Status LocalJob::waitLocked(std::unique_lock<std::mutex>& lock, int self, const std::atomic<bool>& abort,
                            Deadline deadline, const std::string& op, Ready ready, Failed failed, TimedOut timedOut) {
  for (;;) {
    if (ready()) return kOk;
    if (Status s = failed(); s != kOk) return s;
    if (abort.load(std::memory_order_acquire))
      return CC_ERROR(Status::kRemoteError, "bootstrap: rank %d aborted while %s", self, op.c_str());
    if (deadline.expired()) return timedOut();
    waitSlice(lock, self, nullptr, pollSliceMs(deadline));
  }
}

Status LocalJob::send(int self, int peer, uint64_t tag, const void* data, size_t size, Deadline deadline,
                      const std::atomic<bool>& abort) {
  char op[96];
  snprintf(op, sizeof(op), "sending a message (tag %llu, %zu bytes)", static_cast<unsigned long long>(tag), size);
  if (procOf_[peer] != selfProc_)
    return sendRemote(self, peer, wire::Channel::kUser, tag, data, size, deadline, abort, op);
  std::lock_guard<std::mutex> lock(mu_);
  if (peer != self && mail_[peer]->gone) return goneError(self, peer, op);
  const char* p = static_cast<const char*>(data);
  mail_[peer]->queues[{static_cast<uint32_t>(wire::Channel::kUser), self, tag}].emplace_back(p, p + size);
  wakeLocked(peer);
  return kOk;
}

Status LocalJob::sendRemote(int self, int peer, wire::Channel channel, uint64_t tag, const void* data, size_t size,
                            Deadline deadline, const std::atomic<bool>& abort, const std::string& op) {
  OutLink& link = *out_[procOf_[peer]];
  {
    // Waiting for another local sender to finish, this rank may poll for the process meanwhile.
    std::unique_lock<std::mutex> lock(mu_);
    link.waiting.push_back(self);
    // A process whose every connection to this one closed is gone (or has left the job).
    std::string why;
    Status s = waitLocked(
        lock, self, abort, deadline, op, [&] { return !link.busy; },
        [&] { return goneLocked(peer, &why) ? goneError(self, peer, op) : kOk; },
        [&] {
          return ioFailure(self, {IoCode::kTimeout, 0}, peer, op, "to");
        });
    std::erase(link.waiting, self);
    CC_CHECK(s);
    link.busy = true;
  }
  struct Release {
    LocalJob& job;
    OutLink& link;
    ~Release() {
      std::lock_guard<std::mutex> lock(job.mu_);
      link.busy = false;
      for (int r : link.waiting) job.wakeLocked(r);
    }
  } release{*this, link};
  const bool fresh = !link.sock.valid();
  if (fresh) {
    IoStatus io = Socket::connect(table_[peer].addr, deadline, &abort, &link.sock);
    if (!io.ok()) return ioFailure(self, io, peer, op, "to");
  }
  const wire::HelloMsg hello{wire::kMagic, wire::kVersion, {secret_[0], secret_[1]}, self, 0};
  const wire::MsgHeader header{self, peer, static_cast<uint32_t>(channel), 0, tag, size};
  // One send (one segment, one wake-up of the receiver) for the hello, header and a payload of
  // control size; a larger payload follows the header on its own.
  const bool together = size <= kCoalesceBytes;
  std::vector<char> head;
  if (fresh) head.insert(head.end(), reinterpret_cast<const char*>(&hello), reinterpret_cast<const char*>(&hello + 1));
  head.insert(head.end(), reinterpret_cast<const char*>(&header), reinterpret_cast<const char*>(&header + 1));
  if (together && size != 0)
    head.insert(head.end(), static_cast<const char*>(data), static_cast<const char*>(data) + size);
  const struct {
    const void* p;
    size_t n;
  } pieces[] = {{head.data(), head.size()}, {data, together ? 0 : size}};
  for (const auto& piece : pieces) {
    size_t done = 0;
    for (;;) {
      IoStatus io = link.sock.sendSome(piece.p, piece.n, &done);
      if (io.ok() && done == piece.n) break;
      if (io.ok() && abort.load(std::memory_order_acquire)) io = {IoCode::kAborted, 0};
      if (io.ok() && deadline.expired()) io = {IoCode::kTimeout, 0};
      if (!io.ok()) {
        link.sock.close();  // a partly sent message leaves the stream unusable; the next send reconnects
        return ioFailure(self, io, peer, op, "to");
      }
      // Keep filing what arrives meanwhile: the peer process may be blocked sending to this one.
      pollfd f{link.sock.fd(), POLLOUT, 0};
      std::unique_lock<std::mutex> lock(mu_);
      waitSlice(lock, self, &f, pollSliceMs(deadline));
    }
  }
  return kOk;
}

Status LocalJob::take(int self, int peer, wire::Channel channel, uint64_t tag, std::vector<char>* out,
                      Deadline deadline, const std::atomic<bool>& abort, const std::string& op) {
  std::unique_lock<std::mutex> lock(mu_);
  auto& queues = mail_[self]->queues;
  const QueueKey key{static_cast<uint32_t>(channel), peer, tag};
  std::string why;
  return waitLocked(
      lock, self, abort, deadline, op,
      [&] {
        auto it = queues.find(key);
        if (it == queues.end()) return false;
        *out = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) queues.erase(it);
        return true;
      },
      [&] { return peer != self && goneLocked(peer, &why) ? goneError(self, peer, op) : kOk; },
      [&] {
        return ioFailure(self, {IoCode::kTimeout, 0}, peer, op, "from");
      });
}

Status LocalJob::recv(int self, int peer, uint64_t tag, void* data, size_t size, Deadline deadline,
                      const std::atomic<bool>& abort) {
  char op[96];
  snprintf(op, sizeof(op), "waiting for a message (tag %llu)", static_cast<unsigned long long>(tag));
  std::vector<char> msg;
  CC_CHECK(take(self, peer, wire::Channel::kUser, tag, &msg, deadline, abort, op));
  if (msg.size() != size)
    return CC_ERROR(Status::kInternalError,
                    "bootstrap: rank %d expected %zu bytes from %s with tag %llu, but the message has %zu bytes", self,
                    size, who(peer).c_str(), static_cast<unsigned long long>(tag), msg.size());
  if (size != 0) memcpy(data, msg.data(), size);
  return kOk;
}

Status LocalJob::exchangeBlocks(int self, Round& round, uint64_t seq, Deadline deadline,
                                const std::atomic<bool>& abort) {
  const int procs = static_cast<int>(procRanks_.size());
  const size_t bytes = round.bytes;
  const int nextLeader = procRanks_[(selfProc_ + 1) % procs][0];
  const int prevLeader = procRanks_[(selfProc_ + procs - 1) % procs][0];
  // Every local rank has written its slot and waits for `done`: the leader alone touches buf.
  std::vector<char> block;
  const char* all = round.buf.data();
  for (int r : procRanks_[selfProc_]) block.insert(block.end(), all + r * bytes, all + (r + 1) * bytes);
  for (int step = 0; step < procs - 1; ++step) {
    CC_CHECK(sendRemote(self, nextLeader, wire::Channel::kGather, seq, block.data(), block.size(), deadline, abort,
                        "sending allgather data"));
    CC_CHECK(
        take(self, prevLeader, wire::Channel::kGather, seq, &block, deadline, abort, "waiting for allgather data"));
    const std::vector<int>& ranks = procRanks_[(selfProc_ + procs - 1 - step) % procs];
    if (block.size() != ranks.size() * bytes)
      return CC_ERROR(Status::kInternalError,
                      "bootstrap: rank %d got %zu bytes of allgather data for the %zu ranks of rank %d's process from "
                      "%s, not %zu per rank (do the ranks call allgather with the same size?)",
                      self, block.size(), ranks.size(), ranks[0], who(prevLeader).c_str(), bytes);
    for (size_t i = 0; i < ranks.size(); ++i)
      memcpy(round.buf.data() + ranks[i] * bytes, block.data() + i * bytes, bytes);
  }
  return kOk;
}

Status LocalJob::allGather(int self, void* data, size_t bytesPerRank, Deadline deadline,
                           const std::atomic<bool>& abort) {
  char* base = static_cast<char*>(data);
  const std::vector<int>& local = procRanks_[selfProc_];
  const int nLocal = static_cast<int>(local.size());
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t seq = mail_[self]->gatherSeq++;
  auto [it, fresh] = rounds_.try_emplace(seq);
  Round& round = it->second;
  if (fresh) {
    round.bytes = bytesPerRank;
    round.buf.resize(nranks_ * bytesPerRank);
    round.readers = nLocal;
  }
  // Every rank that entered leaves the round once, whatever happens; the last one frees it.
  struct Leave {
    std::map<uint64_t, Round>& rounds;
    uint64_t seq;
    Round& round;
    ~Leave() {
      if (--round.readers == 0) rounds.erase(seq);
    }
  } leave{rounds_, seq, round};
  if (round.bytes != bytesPerRank)
    return CC_ERROR(Status::kInternalError,
                    "bootstrap: rank %d entered allgather #%llu with %zu bytes per rank, another rank of its process "
                    "with %zu",
                    self, static_cast<unsigned long long>(seq), bytesPerRank, round.bytes);
  memcpy(round.buf.data() + self * bytesPerRank, base + self * bytesPerRank, bytesPerRank);
  if (++round.arrived == nLocal && self != leader_) wakeLocked(leader_);
  // The first local rank that has not entered this round (-1: all have).
  auto missing = [&]() -> int {
    for (int r : local)
      if (mail_[r]->gatherSeq <= seq) return r;
    return -1;
  };
  const std::string op = "in allgather";
  if (self == leader_) {
    Status s = waitLocked(
        lock, self, abort, deadline, op, [&] { return round.arrived == nLocal; },
        [&] {
          const int r = missing();
          if (r < 0 || !mail_[r]->gone) return kOk;
          return goneError(self, r, "waiting for it in allgather");
        },
        [&] {
          return ioFailure(self, {IoCode::kTimeout, 0}, missing(), "waiting in allgather", "for");
        });
    if (isOk(s) && procRanks_.size() > 1) {
      lock.unlock();
      s = exchangeBlocks(self, round, seq, deadline, abort);
      lock.lock();
    }
    if (!isOk(s)) {
      round.status = s;
      round.error = threadLastError();
    }
    round.done = true;
    for (int r : local) wakeLocked(r);
  } else {
    CC_CHECK(waitLocked(
        lock, self, abort, deadline, op, [&] { return round.done; },
        [&] { return mail_[leader_]->gone ? goneError(self, leader_, "waiting for it in allgather") : kOk; },
        [&] {
          const int r = missing();
          if (r >= 0) return ioFailure(self, {IoCode::kTimeout, 0}, r, "waiting in allgather", "for");
          const int procs = static_cast<int>(procRanks_.size());
          return ioFailure(self, {IoCode::kTimeout, 0}, procRanks_[(selfProc_ + procs - 1) % procs][0],
                           "waiting for allgather data", "from");
        }));
    if (!isOk(round.status)) setThreadLastError(round.error);
  }
  if (!isOk(round.status)) return round.status;
  memcpy(base, round.buf.data(), round.buf.size());
  return kOk;
}

}  // namespace collcomm::detail
