// ccCommAbort's account of its own time (see AbortPhases). Setup tier: INFO logging only.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "common/log.h"
#include "core/comm.h"

namespace collcomm::detail {

// Where one ccCommAbort's time went, logged at INFO (INIT) as it returns: the abort is bounded
// (tests/mp's kAbortBoundS), and a slow one under load must say which phase was slow.
// The thread's own accounting (/proc/thread-self/schedstat) tells a slow abort's causes apart:
// time on a CPU (work), time runnable but waiting for one (load), and the rest (blocked on
// something: a lock, a sleep, a wait).
class AbortPhases {
 public:
  explicit AbortPhases(const ccComm* comm) : rank_(comm->rank), nranks_(comm->nranks) {
    if (!logEnabled(LogLevel::kInfo, kSubsysInit)) return;
    haveSched_ = readSchedStat(&cpu0_, &queued0_);
    othersCpu0_ = othersCpuUs();
  }
  AbortPhases(const AbortPhases&) = delete;
  AbortPhases& operator=(const AbortPhases&) = delete;
  // Ends the phase `name` (the time since the previous mark).
  void mark(const char* name) {
    const auto now = Clock::now();
    if (count_ < kMaxPhases) phases_[count_++] = {name, std::chrono::duration<double, std::milli>(now - last_).count()};
    last_ = now;
  }
  void outcome(const char* what) { outcome_ = what; }
  ~AbortPhases() {
    if (!logEnabled(LogLevel::kInfo, kSubsysInit)) return;
    char text[256];
    int len = 0;
    for (int i = 0; i < count_ && len < static_cast<int>(sizeof(text)); ++i)
      len +=
          snprintf(text + len, sizeof(text) - len, "%s%s %.1f ms", i > 0 ? ", " : "", phases_[i].name, phases_[i].ms);
    if (count_ == 0) text[0] = '\0';
    const double totalMs = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
    uint64_t cpu = 0, queued = 0;
    char sched[224] = "";
    if (haveSched_ && readSchedStat(&cpu, &queued)) {
      const double cpuMs = static_cast<double>(cpu - cpu0_) / 1e6,
                   queuedMs = static_cast<double>(queued - queued0_) / 1e6;
      snprintf(sched, sizeof(sched),
               "; this thread: %.1f ms on a CPU, %.1f ms waiting for one, %.1f ms blocked; the process's other "
               "threads: %.1f ms on a CPU",
               cpuMs, queuedMs, totalMs - cpuMs - queuedMs, static_cast<double>(othersCpuUs() - othersCpu0_) / 1e3);
    }
    CC_INFO(kSubsysInit, "ccCommAbort: rank %d of %d: %.1f ms (%s); %s%s", rank_, nranks_, totalMs, text, outcome_,
            sched);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMaxPhases = 6;
  struct Phase {
    const char* name;
    double ms;
  };
  // Nanoseconds this thread ran, and waited runnable, so far; false where the file is missing.
  static bool readSchedStat(uint64_t* cpuNs, uint64_t* queuedNs) {
    FILE* f = fopen("/proc/thread-self/schedstat", "r");
    if (f == nullptr) return false;
    unsigned long long cpu = 0, queued = 0;
    const bool ok = fscanf(f, "%llu %llu", &cpu, &queued) == 2;
    fclose(f);
    *cpuNs = cpu;
    *queuedNs = queued;
    return ok;
  }

  // CPU microseconds the process's threads other than this one used so far (exited ones too).
  static int64_t othersCpuUs() {
    rusage all{}, self{};
    getrusage(RUSAGE_SELF, &all);
    getrusage(RUSAGE_THREAD, &self);
    auto us = [](const rusage& r) {
      return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * int64_t{1000000} + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
    };
    return us(all) - us(self);
  }

  int rank_, nranks_;
  int64_t othersCpu0_ = 0;
  bool haveSched_ = false;
  uint64_t cpu0_ = 0, queued0_ = 0;
  Clock::time_point start_ = Clock::now(), last_ = start_;
  Phase phases_[kMaxPhases] = {};
  int count_ = 0;
  const char* outcome_ = "freed";
};

}  // namespace collcomm::detail
