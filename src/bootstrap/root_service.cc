// The root service thread: one poll() loop over the listener and every connection, each read
// incrementally into its RegisterMsg, so a slow or hostile connection never blocks the others.
#include "bootstrap/root_service.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "bootstrap/wire.h"
#include "common/log.h"

namespace collcomm::detail {
namespace {

using Clock = Deadline::Clock;

// How long the root spends sending one rank its answer.
constexpr int kAnswerSendMs = 5000;

int msUntil(Clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT32_MAX));
}

// The roots this process serves, by address; an entry lives while its service or a watching rank does.
std::mutex gLocalRootsMutex;
std::map<std::string, std::weak_ptr<LocalRootFailure>> gLocalRoots;

std::shared_ptr<LocalRootFailure> publishLocalRoot(const SocketAddress& addr) {
  auto record = std::make_shared<LocalRootFailure>();
  std::lock_guard<std::mutex> lock(gLocalRootsMutex);
  std::erase_if(gLocalRoots, [](const auto& entry) { return entry.second.expired(); });
  gLocalRoots[addr.toString()] = record;
  return record;
}

class RootService {
 public:
  RootService(Socket listener, const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds)
      : listener_(std::move(listener)),
        addr_(addr),
        localFailure_(publishLocalRoot(addr)),
        timeoutSeconds_(timeoutSeconds),
        deadline_(Deadline::afterSeconds(timeoutSeconds)) {
    secret_[0] = secret[0];
    secret_[1] = secret[1];
  }

  void run();

 private:
  struct Conn {
    Socket sock;
    SocketAddress peer;
    Clock::time_point acceptedAt;
    wire::RegisterMsg reg{};
    size_t got = 0;
    bool registered = false;
    Clock::time_point answerBy;
  };

  void acceptPending();
  // Out of descriptors: answers every connection waiting in the backlog with `sentence` through the
  // spare descriptor (closed to make room, then reopened), so no rank waits for its deadline.
  void refuseWaiting(const std::string& sentence);
  void readFrom(Conn& c);
  void onRegistration(Conn& c);
  // Marks the job failed and answers every registered rank with `sentence`.
  void fail(Status code, const std::string& sentence);
  void answer(Conn& c, Status code, const std::string& sentence);
  void sendTable();
  std::string missingRanksSentence(const std::string& context) const;
  int pollTimeoutMs() const;

  Socket listener_;
  Socket spare_{open("/dev/null", O_RDONLY | O_CLOEXEC)};  // given up when accept runs out of descriptors
  SocketAddress addr_;
  std::shared_ptr<LocalRootFailure> localFailure_;
  uint64_t secret_[2];
  double timeoutSeconds_;
  Deadline deadline_;
  std::vector<std::unique_ptr<Conn>> conns_;
  int nranks_ = -1;     // agreed size, from the first registration
  int firstRank_ = -1;  // the rank that set nranks_
  std::vector<Conn*> byRank_;
  int registered_ = 0;
  bool failed_ = false;
  Status failCode_ = kOk;
  std::string failSentence_;
  int answered_ = 0;  // registrations answered after the failure (and before it, by fail())
  int maxNranks_ = 0;
  bool done_ = false;
};

void RootService::run() {
  CC_INFO(kSubsysBootstrap, "bootstrap root listening on %s", addr_.toString().c_str());
  std::vector<pollfd> fds;
  while (!done_) {
    if (deadline_.expired()) {
      char ctx[160];
      snprintf(ctx, sizeof(ctx), " (the root at %s waited COLLCOMM_TIMEOUT=%g s)", addr_.toString().c_str(),
               timeoutSeconds_);
      if (!failed_) fail(Status::kTimeout, missingRanksSentence(ctx));
      CC_INFO(kSubsysBootstrap, "bootstrap root %s: timed out; exiting", addr_.toString().c_str());
      break;
    }
    Clock::time_point now = Clock::now();
    for (auto& c : conns_) {
      if (!c->sock.valid()) continue;
      if (c->registered && now >= c->answerBy && !failed_) {
        char ctx[160];
        snprintf(ctx, sizeof(ctx), " before rank %d's deadline (root at %s)", c->reg.rank, addr_.toString().c_str());
        fail(Status::kTimeout, missingRanksSentence(ctx));
      } else if (!c->registered && now - c->acceptedAt >= std::chrono::milliseconds(wire::kHelloTimeoutMs)) {
        CC_INFO(kSubsysBootstrap, "bootstrap root: closing a connection from %s that sent no registration",
                c->peer.toString().c_str());
        c->sock.close();
      }
    }
    std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return !c->sock.valid(); });
    // (A failure before any registration was read, maxNranks_ 0, keeps serving: the ranks whose
    // connections wait in the backlog are answered as they come.)
    if (failed_ && maxNranks_ > 0 && answered_ >= maxNranks_) break;

    fds.assign(1, pollfd{listener_.fd(), POLLIN, 0});
    for (auto& c : conns_) fds.push_back(pollfd{c->sock.fd(), POLLIN, 0});
    int n = poll(fds.data(), fds.size(), std::max(1, pollTimeoutMs()));
    if (n < 0 && errno != EINTR) {
      CC_WARN("bootstrap root %s: poll failed: %s; the root stops serving", addr_.toString().c_str(), strerror(errno));
      break;
    }
    if (n <= 0) continue;
    // Connections first (fds[i+1] is conns_[i]); new ones are appended by acceptPending.
    size_t polled = conns_.size();
    for (size_t i = 0; i < polled && !done_; ++i) {
      if (fds[i + 1].revents != 0 && conns_[i]->sock.valid()) readFrom(*conns_[i]);
    }
    if (!done_ && fds[0].revents != 0) acceptPending();
  }
}

int RootService::pollTimeoutMs() const {
  int ms = std::min(deadline_.remainingMs(), 1000);
  for (const auto& c : conns_) {
    if (c->registered && !failed_) ms = std::min(ms, msUntil(c->answerBy));
    if (!c->registered) ms = std::min(ms, msUntil(c->acceptedAt + std::chrono::milliseconds(wire::kHelloTimeoutMs)));
  }
  return ms;
}

void RootService::acceptPending() {
  // A spare lost to another thread of this process (refuseWaiting) is taken back once one is free.
  if (!spare_.valid()) spare_ = Socket(open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (;;) {
    auto c = std::make_unique<Conn>();
    IoStatus s = listener_.tryAccept(&c->sock, &c->peer);
    if (!s.ok()) {
      CC_INFO(kSubsysBootstrap, "bootstrap root %s: accept failed: %s", addr_.toString().c_str(), s.describe().c_str());
      if (s.err == EMFILE || s.err == ENFILE) {
        rlimit limit{};
        getrlimit(RLIMIT_NOFILE, &limit);
        char buf[320];
        snprintf(buf, sizeof(buf),
                 "bootstrap: the root at %s cannot accept more registrations: %s (RLIMIT_NOFILE %llu); raise the "
                 "limit (ulimit -n) or start fewer ranks in the root's process",
                 addr_.toString().c_str(), strerror(s.err), static_cast<unsigned long long>(limit.rlim_cur));
        if (!failed_) fail(Status::kSystemError, buf);
        refuseWaiting(failSentence_);
      }
      return;
    }
    if (!c->sock.valid()) return;
    c->acceptedAt = Clock::now();
    conns_.push_back(std::move(c));
  }
}

void RootService::refuseWaiting(const std::string& sentence) {
  while (spare_.valid()) {
    spare_.close();
    Socket c;
    IoStatus s = listener_.tryAccept(&c);
    const bool got = s.ok() && c.valid();
    if (got) {
      // The rank sent its registration at once and now waits for this answer.
      wire::ReplyHeader h{wire::kMagic, static_cast<int32_t>(Status::kSystemError), sentence.size()};
      Deadline d = deadlineInMs(kAnswerSendMs);
      IoStatus w = c.sendAll(&h, sizeof(h), d, nullptr);
      if (w.ok()) c.sendAll(sentence.data(), sentence.size(), d, nullptr);
      c.close();
    }
    spare_ = Socket(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!got) return;
  }
  // No spare: leave the listener alone for a moment rather than spin on it.
  poll(nullptr, 0, 10);
}

void RootService::readFrom(Conn& c) {
  if (c.registered) {
    // A registered rank sends nothing more: readable means it went away (or misbehaves).
    char byte;
    size_t got = 0;
    IoStatus s = c.sock.recvSome(&byte, 1, &got);
    if (s.ok() && got == 0) return;
    CC_INFO(kSubsysBootstrap, "bootstrap root: rank %d (host %s) left before the table was complete", c.reg.rank,
            c.reg.self.host);
    byRank_[c.reg.rank] = nullptr;
    --registered_;
    c.sock.close();
    return;
  }
  IoStatus s = c.sock.recvSome(&c.reg, sizeof(c.reg), &c.got);
  const char* why = nullptr;
  if (!s.ok()) {
    why = c.got == 0 ? nullptr : "it closed mid-registration";
    if (why == nullptr) {
      c.sock.close();  // a probe that connected and left
      return;
    }
  } else if (c.got >= 2 * sizeof(uint32_t) && (c.reg.magic != wire::kMagic || c.reg.version != wire::kVersion)) {
    why = "it is not a collcomm bootstrap registration (or another version)";
  } else if (c.got == sizeof(c.reg) && !wire::sameSecret(c.reg.secret, secret_)) {
    why = "it presented the wrong secret (a ccUniqueId of another job?)";
  }
  if (why != nullptr) {
    CC_INFO(kSubsysBootstrap, "bootstrap root %s: rejected a connection from %s: %s", addr_.toString().c_str(),
            c.peer.toString().c_str(), why);
    c.sock.close();
    return;
  }
  if (c.got == sizeof(c.reg)) onRegistration(c);
}

void RootService::onRegistration(Conn& c) {
  wire::RegisterMsg& r = c.reg;
  r.self.host[wire::kHostNameBytes - 1] = '\0';
  c.registered = true;
  maxNranks_ = std::max(maxNranks_, r.nranks);
  CC_INFO(kSubsysBootstrap, "bootstrap root: rank %d of %d registered from host %s pid %d", r.rank, r.nranks,
          r.self.host, r.self.pid);
  if (failed_) {
    answer(c, failCode_, failSentence_);
    ++answered_;
    return;
  }
  char buf[512];
  if (r.nranks <= 0 || r.rank < 0 || r.rank >= r.nranks) {
    snprintf(buf, sizeof(buf), "bootstrap: rank %d registered with nranks=%d (host %s, pid %d), which is out of range",
             r.rank, r.nranks, r.self.host, r.self.pid);
    fail(Status::kInvalidUsage, buf);
    return;
  }
  if (nranks_ < 0) {
    nranks_ = r.nranks;
    firstRank_ = r.rank;
    byRank_.assign(nranks_, nullptr);
  }
  if (r.nranks != nranks_) {
    snprintf(buf, sizeof(buf),
             "bootstrap: rank %d says nranks=%d but rank %d says nranks=%d; every rank must pass the same nranks",
             r.rank, r.nranks, firstRank_, nranks_);
    fail(Status::kInvalidUsage, buf);
    return;
  }
  if (Conn* other = byRank_[r.rank]; other != nullptr) {
    snprintf(buf, sizeof(buf), "bootstrap: rank %d registered twice: from host %s (pid %d) and from host %s (pid %d)",
             r.rank, other->reg.self.host, other->reg.self.pid, r.self.host, r.self.pid);
    fail(Status::kInvalidUsage, buf);
    return;
  }
  byRank_[r.rank] = &c;
  ++registered_;
  // Answer a little before the rank gives up, so it hears which ranks are missing.
  int64_t waitMs = std::max<int64_t>(r.waitMs, 0);
  int64_t marginMs = std::clamp<int64_t>(waitMs / 10, 20, 1000);
  c.answerBy =
      Clock::now() + std::chrono::milliseconds(std::min<int64_t>(waitMs, INT32_MAX) - std::min(marginMs, waitMs));
  if (registered_ == nranks_) sendTable();
}

void RootService::fail(Status code, const std::string& sentence) {
  failed_ = true;
  failCode_ = code;
  failSentence_ = sentence;
  if (!localFailure_->failed.load(std::memory_order_relaxed)) {
    localFailure_->code = code;
    localFailure_->sentence = sentence;
    localFailure_->failed.store(true, std::memory_order_release);
  }
  CC_INFO(kSubsysBootstrap, "bootstrap root %s: job failed: %s", addr_.toString().c_str(), sentence.c_str());
  for (auto& c : conns_) {
    if (c->sock.valid() && c->registered) {
      answer(*c, code, sentence);
      ++answered_;
    }
  }
  byRank_.assign(byRank_.size(), nullptr);
  registered_ = 0;
}

void RootService::answer(Conn& c, Status code, const std::string& sentence) {
  wire::ReplyHeader h{wire::kMagic, static_cast<int32_t>(code), sentence.size()};
  Deadline d = deadlineInMs(std::min(kAnswerSendMs, std::max(deadline_.remainingMs(), 1)));
  IoStatus s = c.sock.sendAll(&h, sizeof(h), d, nullptr);
  if (s.ok()) s = c.sock.sendAll(sentence.data(), sentence.size(), d, nullptr);
  if (!s.ok())
    CC_INFO(kSubsysBootstrap, "bootstrap root: could not answer rank %d (host %s): %s", c.reg.rank, c.reg.self.host,
            s.describe().c_str());
  c.sock.close();
}

void RootService::sendTable() {
  std::vector<wire::PeerEntry> table(nranks_);
  for (int r = 0; r < nranks_; ++r) table[r] = byRank_[r]->reg.self;
  wire::ReplyHeader h{wire::kMagic, 0, table.size() * sizeof(wire::PeerEntry)};
  for (int r = 0; r < nranks_; ++r) {
    Conn& c = *byRank_[r];
    Deadline d = deadlineInMs(kAnswerSendMs);
    IoStatus s = c.sock.sendAll(&h, sizeof(h), d, nullptr);
    if (s.ok()) s = c.sock.sendAll(table.data(), h.bytes, d, nullptr);
    if (!s.ok())
      CC_INFO(kSubsysBootstrap, "bootstrap root: could not send the table to rank %d (host %s): %s", r, c.reg.self.host,
              s.describe().c_str());
    c.sock.close();
  }
  CC_INFO(kSubsysBootstrap, "bootstrap root %s: all %d rank(s) joined; exiting", addr_.toString().c_str(), nranks_);
  done_ = true;
}

std::string RootService::missingRanksSentence(const std::string& context) const {
  std::string list;
  int missing = 0;
  int total = nranks_ > 0 ? nranks_ : maxNranks_;
  for (int r = 0; r < total; ++r) {
    if (r < static_cast<int>(byRank_.size()) && byRank_[r] != nullptr) continue;
    if (++missing <= 16) list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  if (missing > 16) list += ",... (" + std::to_string(missing) + " in all)";
  if (total <= 0) return "bootstrap: no rank joined" + context;
  return "bootstrap: " + std::string(missing == 1 ? "rank " : "ranks ") + list + " of " + std::to_string(total) +
         " never joined" + context + "; check that every rank was started with the same ccUniqueId";
}

Status startThread(std::unique_ptr<RootService> service) {
  try {
    std::thread([s = std::move(service)] { s->run(); }).detach();
  } catch (const std::system_error& e) {
    return CC_ERROR(Status::kSystemError, "bootstrap: cannot start the root service thread: %s", e.what());
  }
  return kOk;
}

}  // namespace

std::shared_ptr<const LocalRootFailure> watchLocalRoot(const SocketAddress& addr) {
  std::lock_guard<std::mutex> lock(gLocalRootsMutex);
  auto it = gLocalRoots.find(addr.toString());
  return it == gLocalRoots.end() ? nullptr : it->second.lock();
}

Status startRootService(Socket listener, const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds) {
  return startThread(std::make_unique<RootService>(std::move(listener), addr, secret, timeoutSeconds));
}

Status startRootServiceAt(const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds, bool* started) {
  *started = false;
  Socket listener;
  SocketAddress bound;
  IoStatus s = Socket::listen(addr, &listener, &bound);
  if (!s.ok()) {
    if (s.err == EADDRNOTAVAIL || s.err == EADDRINUSE) {
      CC_INFO(kSubsysBootstrap, "bootstrap: not starting a root at %s here: %s", addr.toString().c_str(),
              s.describe().c_str());
      return kOk;
    }
    return CC_ERROR(Status::kSystemError, "bootstrap: cannot listen on COLLCOMM_COMM_ID's address %s: %s",
                    addr.toString().c_str(), s.describe().c_str());
  }
  CC_CHECK(startRootService(std::move(listener), bound, secret, timeoutSeconds));
  *started = true;
  return kOk;
}

}  // namespace collcomm::detail
