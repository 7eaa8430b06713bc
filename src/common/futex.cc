// futex and membarrier system calls behind futex.h.
#include "common/futex.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#include "common/log.h"

namespace collcomm::detail {

void futexWait(uint32_t* word, uint32_t expected, int64_t timeoutNs) {
  timespec t{static_cast<time_t>(timeoutNs / 1000000000), static_cast<long>(timeoutNs % 1000000000)};
  (void)syscall(SYS_futex, word, FUTEX_WAIT, expected, &t, nullptr, 0);
}

void futexWakeAll(uint32_t* word) { (void)syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

namespace {

bool registerGlobal() {
  const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0u, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 ||
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0u, 0) != 0) {
    CC_INFO(kSubsysInit, "membarrier (global expedited) unavailable: waiting host threads yield and never sleep");
    return false;
  }
  return true;
}

}  // namespace

bool parkingFenceReady() {
  static const bool ready = registerGlobal();
  return ready;
}

void parkingFence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  (void)syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0u, 0);
}

}  // namespace collcomm::detail
