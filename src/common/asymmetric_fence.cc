// membarrier-backed heavy side of the asymmetric fence (asymmetric_fence.h).
#include "common/asymmetric_fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"

namespace collcomm::detail {
namespace {

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0u, 0); }

bool registerOnce() {
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0 ||
      membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    CC_INFO(kSubsysInit, "membarrier (private expedited) unavailable: operations enter a communicator with a full fence");
    return false;
  }
  return true;
}

}  // namespace

bool asymmetricFenceReady() {
  static const bool ready = registerOnce();
  return ready;
}

void heavyFence(bool ready) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (ready && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Registered, yet refused (cannot happen per the kernel's contract): nothing safe is left but to
  // say so; the fast side did not fence.
  if (ready) CC_WARN("membarrier failed after registration: an operation entering while the communicator aborts may race");
}

}  // namespace collcomm::detail
