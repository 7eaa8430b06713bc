// Deterministic "the other thread has reached its wait" for tests that abort or leave while a
// peer is in a call, instead of sleeping and hoping it got there (a thread that starts late then
// calls into a freed communicator). Each helper polls a condition under a deadline and says
// whether it became true; none waits a fixed time (kPollEvery only spaces the looks, so a poller
// on a loaded machine leaves the CPU to the thread it waits for).
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "collcomm.h"
#include "core/comm.h"

namespace collcomm::test {

inline constexpr std::chrono::microseconds kPollEvery{200};

// The thread that will make the call announces it just before; the waiting side then watches the
// communicator count an operation in flight (ccComm::opsBusy, core/comm.h). The announcement
// separates the awaited call from earlier operations on the same communicator (a warm-up).
class OpEntry {
 public:
  explicit OpEntry(ccComm_t comm) : comm_(comm) {}

  // On the calling thread, right before the operation.
  void announce() { announced_.store(true, std::memory_order_release); }

  // True once the announced operation is inside the library (it must not be able to finish
  // without the waiting side, or it may have left again before it is seen); false at the limit.
  bool waitInside(std::chrono::milliseconds limit = std::chrono::seconds(30)) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!announced_.load(std::memory_order_acquire) || comm_->opsBusy.load(std::memory_order_acquire) == 0) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(kPollEvery);
    }
    return true;
  }

 private:
  ccComm_t comm_;
  std::atomic<bool> announced_{false};
};

// The calling thread's kernel id, for threadAsleep.
inline pid_t currentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// For calls without a communicator to watch (the bootstrap, sockets): true once thread `tid` of
// this process is asleep in the kernel (state S in /proc: blocked in poll, a condition variable
// or a lock), false at the limit. Used after the thread announced it is about to make the call,
// so its sleep is that call's wait.
inline bool waitThreadAsleep(pid_t tid, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (FILE* f = fopen(path.c_str(), "r")) {
      char buf[512] = {};
      const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
      fclose(f);
      // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
      const std::string stat(buf, n);
      const size_t close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'S') return true;
    }
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(kPollEvery);
  }
}

}  // namespace collcomm::test
