// An asymmetric fence pair (Dekker's pattern without a fence on the fast side): the thread that
// runs operations publishes "I am inside" with a plain store and reads the abort flag after a
// compiler-only fence; ccCommAbort, the rare side, stores the flag and then makes every thread of
// the process execute a full fence (membarrier) before it reads "inside". Either the operation
// sees the flag, or the abort sees the operation.
//
// Why: a locked read-modify-write (what std::atomic counters compile to on x86) waits until every
// earlier store has left the core. After an operation's last store to a FIFO line the peer is
// polling, that is a full cross-core round trip per call (perf: 27% of a 2-rank 8-byte broadcast's
// root). Without the fence the store drains while the next call starts.
//
// Where membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is missing (kernels before 4.14, seccomp
// filters), both sides fall back to a full fence.
#pragma once

#include <atomic>

namespace collcomm::detail {

// Registers the process for expedited membarrier once; true when the fast side may use
// lightFence(). Call before either side relies on it (communicator init).
bool asymmetricFenceReady();

inline void lightFence(bool ready) {
  if (ready)
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Every thread of this process has executed a full fence when this returns.
void heavyFence(bool ready);

}  // namespace collcomm::detail
