// The per-process proxy thread (see proxy.h).
#include "proxy/proxy.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"

namespace collcomm::detail {
namespace {

// Rounds in a row that moved something before the thread yields its core anyway (the executor
// waiting on it may share the core).
constexpr int kBurstRounds = 4;
// How long the thread keeps polling after the last operation ended and the last client's work was
// done before it sleeps: back-to-back operations then never wait for a wake-up (a futex wake-up
// costs tens of microseconds on a VM), and an idle process costs no core.
constexpr auto kLinger = std::chrono::milliseconds(5);

class Proxy {
 public:
  void add(ProxyClient* c) {
    uint64_t start = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      clients_.push_back(c);
      if (!running_) {
        running_ = true;
        start = ++generation_;
      }
    }
    if (start != 0) {
      std::thread([this, start] { loop(start); }).detach();
      CC_INFO(kSubsysProxy, "proxy thread started");
    }
    cv_.notify_all();
  }

  // Once this returns the proxy no longer touches `c`: rounds run under mu_. The last client's
  // removal tells the thread to end and does not wait for it (it is not joined): a teardown
  // (ccCommAbort) must not wait for the proxy thread to get a CPU again, which under load took
  // 0.2 s at a time. A thread still ending when the next client comes is told apart by its
  // generation, and ends at its next look.
  void remove(ProxyClient* c) {
    bool stopped = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      clients_.erase(std::remove(clients_.begin(), clients_.end(), c), clients_.end());
      if (clients_.empty() && running_) {
        running_ = false;
        ++generation_;
        stopped = true;
      }
    }
    if (stopped) {
      cv_.notify_all();
      CC_INFO(kSubsysProxy, "proxy thread stopped");
    }
  }

  // From inside a round (under mu_): `work` runs once the round has let go of the lock.
  void afterRound(std::function<void()> work) { deferred_.push_back(std::move(work)); }

  void opBegin() {
    if (active_.fetch_add(1) == 0 && sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_.notify_all();
    }
  }
  void opEnd() { active_.fetch_sub(1, std::memory_order_acq_rel); }

  // One round (of progress, or of progressSends) on the caller's thread, unless the proxy thread
  // (or another caller) is in one.
  template <bool kSendsOnly>
  bool roundHere() {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    for (ProxyClient* c : clients_) (void)(kSendsOnly ? c->progressSends() : c->progress());
    hereRounds_.fetch_add(1, std::memory_order_relaxed);
    runDeferred(lock);
    return true;
  }

 private:
  // Runs what the round just ended deferred, after letting go of the lock; true if there was any.
  bool runDeferred(std::unique_lock<std::mutex>& lock) {
    if (deferred_.empty()) return false;
    std::vector<std::function<void()>> work;
    work.swap(deferred_);
    lock.unlock();
    for (auto& w : work) w();
    return true;
  }

  // The thread takes the lock only to run a round, and only when it is free: an executor running
  // rounds itself (roundHere) holds it, and a thread blocked on it would make every unlock of the
  // executor's a futex wake-up on its critical path (two system calls per operation measured on
  // loopback). Blocking waits on the lock are for sleeping and for (de)registration.
  void loop(uint64_t generation) {
    using Clock = std::chrono::steady_clock;
    int burst = 0;
    Clock::time_point lastBusy = Clock::now();
    uint64_t hereSeen = 0;
    for (;;) {
      // A waiting executor ran rounds itself since the last look: it is polling, so stand aside
      // (on a shared core, a round here would only delay its next one).
      if (const uint64_t here = hereRounds_.load(std::memory_order_relaxed); here != hereSeen) {
        hereSeen = here;
        lastBusy = Clock::now();
        sched_yield();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
      if (!lock.owns_lock()) {  // a round is under way elsewhere, or a client (de)registers
        sched_yield();
        continue;
      }
      if (generation_ != generation) break;
      bool moved = false, work = false;
      for (ProxyClient* c : clients_) {
        moved |= c->progress();
        work |= c->hasWork();
      }
      if (runDeferred(lock)) {
        lastBusy = Clock::now();
        continue;
      }
      if (moved && ++burst < kBurstRounds) continue;
      burst = 0;
      if (moved || work || active_.load(std::memory_order_acquire) != 0) {
        lastBusy = Clock::now();
      } else if (Clock::now() - lastBusy >= kLinger) {
        sleeping_.store(true);  // seq_cst with opBegin: one of the two sees the other
        // Re-check under the lock: opBegin notifies while holding it (and remove() changes the
        // generation under it, seen above in this same hold). The timeout only lets clients
        // notice a departure while idle (hasWork): after one round that finds nothing, the thread
        // sleeps again without lingering.
        if (active_.load() == 0) cv_.wait_for(lock, std::chrono::milliseconds(100));
        sleeping_.store(false, std::memory_order_release);
        continue;
      }
      // Never sleep while anything is pending: give the core to whoever else wants it (the
      // executor waiting for this round's results, on a shared core) and poll again. Alone on its
      // core, a yield costs a fraction of a microsecond.
      lock.unlock();
      sched_yield();
    }
  }

  std::mutex mu_;  // clients_, the thread's life (running_, generation_), deferred_, and each round
  std::condition_variable cv_;
  std::vector<ProxyClient*> clients_;
  std::vector<std::function<void()>> deferred_;  // work the current round left for after it
  // A thread of the current generation was started and not told to end; a thread started with
  // another generation ends at its next look.
  bool running_ = false;
  uint64_t generation_ = 0;
  std::atomic<int> active_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> hereRounds_{0};  // rounds run by waiting executors (roundHere)
};

Proxy& proxy() {
  static Proxy* p = new Proxy();  // never destroyed: clients may outlive static destruction order
  return *p;
}

}  // namespace

void proxyAdd(ProxyClient* client) { proxy().add(client); }
void proxyRemove(ProxyClient* client) { proxy().remove(client); }
ProxyActivity::ProxyActivity(std::atomic<int>* commOps) : commOps_(commOps) {
  commOps_->fetch_add(1, std::memory_order_relaxed);
  proxy().opBegin();
}
ProxyActivity::~ProxyActivity() {
  proxy().opEnd();
  commOps_->fetch_sub(1, std::memory_order_relaxed);
}
bool proxyRoundHere() { return proxy().roundHere<false>(); }
bool proxySendsHere() { return proxy().roundHere<true>(); }
void proxyAfterRound(std::function<void()> work) { proxy().afterRound(std::move(work)); }

}  // namespace collcomm::detail
