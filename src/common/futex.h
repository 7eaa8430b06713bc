// Sleeping and waking on a 32-bit word shared between threads or processes (Linux futex), and the
// fence that lets the rare side of a park/wake handshake pay for both (membarrier across every
// process that registered). Host only; used by the host executor's parking waits
// (device/host/host_platform.h) and by whoever publishes what they wait for (device/fifo.h's
// Doorbell).
#pragma once

#include <cstdint>

namespace collcomm::detail {

// Sleeps while *word == expected, at most timeoutNs (and spuriously less). Works on shared memory
// across processes (no private flag).
void futexWait(uint32_t* word, uint32_t expected, int64_t timeoutNs);
// Wakes every thread sleeping on `word`.
void futexWakeAll(uint32_t* word);

// After publishing what a parked waiter may wait for: wakes it if it is parked on `bell` (a
// Doorbell, device/fifo.h: {parked, rings}). One relaxed load and a branch when nobody is parked;
// the compiler barrier keeps that load after the publish (the waiter's parkingFence does the rest).
template <class Bell>
inline void wakeParked(Bell* bell) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (bell == nullptr || __atomic_load_n(&bell->parked, __ATOMIC_RELAXED) == 0) return;
  __atomic_fetch_add(&bell->rings, 1u, __ATOMIC_RELEASE);
  futexWakeAll(&bell->rings);
}

// Registers this process, once, for membarrier's global expedited fence; true when parkingFence()
// works. Every process of a job registers at communicator init, before any of its threads
// publishes to a waiter that may park.
bool parkingFenceReady();
// Every running thread of every registered process has executed a full fence when this returns:
// a waiter that set `parked` then calls it sees any publish made before a publisher could have
// read `parked` as unset (so publishers need no fence of their own).
void parkingFence();

}  // namespace collcomm::detail
