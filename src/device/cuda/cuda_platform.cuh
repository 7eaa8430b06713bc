// The CUDA executor's platform policy: what the portable device code (protocols.h, primitives.h,
// collectives/) needs from "the hardware" when one thread block plays one channel. Same contract
// as HostPlatform (host/host_platform.h):
//   tid(), nthreads(), barrier()             the block's threads
//   allAgree(v) -> bool                      v held on every thread of the block (a barrier)
//   loadAcquire/loadRelaxed/storeRelease/storeRelaxed on uint64_t words shared with peers
//   waitUntil(pred, peer, what) -> bool      false once the wait has failed; the failure is recorded
//   waitUniform(pred, peer, what) -> bool    the same, for a wait every thread makes alike
//   failStepMismatch(peer, sent, expected)   records a step whose size word (call_tag.h) differs
//   sendStaging(), recvStaging()             kMaxLlStepPayload bytes each, for LL
//   peerPointer, readPeer, writePeer         a peer's memory, for Direct (collectives/direct.h):
//                                            pointers as they are, ranks of one process only
// Optional, for Primitives: reduceCopy(fn, n, src0, pre0, src1, pre1, dst0, dst1, post), a step's
// copy of the platform's own (CudaTreePlatform in tree_kernel.cuh: out of line); without it a step
// inlines the free reduceCopy (reduce_copy.h), as the ring kernels do.
//
// Memory model: peers may be other GPUs or the host, so flag accesses are system scope
// (cuda::atomic_ref<uint64_t, thread_scope_system>: ld.acquire.sys / st.release.sys and their
// relaxed forms). Payload written by all threads is published by thread 0's release store after
// barrier(), which orders the block's writes before it (PTX causality order is cumulative).
//
// Failure, without hangs: a thread whose wait fails sets the block's shared `failed` word, records
// the failure in the launch's CudaKernelStatus (first failure of the launch wins), and from then
// on calls no barrier (Primitives turns every later verb into a no-op) and leaves the kernel. A
// barrier counts only threads that have not exited (sm_70+ and PTX `exit`), so siblings waiting
// there are released; siblings spinning in a wait see `failed` at their next slow-path check. After
// every barrier each thread re-reads `failed` and, once it is set, publishes nothing more (no flag
// or LL line stores), so a peer never receives a step that a failed thread left half written.
//
// Deadline: each wait on its own fails after CudaCollArgs::timeoutNs without its condition coming
// true, timed with the globaltimer (nanoseconds, the same rate on every GPU and clock setting,
// unlike clock64's SM cycles) from the wait's first slow-path check. Counting per wait, not from
// the kernel's start, means a long operation that keeps making progress never times out, while
// a stuck one fails within timeoutNs plus one check interval.
//
// Tier: data path. The slow path (abort flag, peer state, deadline, sibling failure) runs every
// kPollsPerCheck polls of a wait; only it reads the globaltimer.
#pragma once

#include <cuda/atomic>

#include <cstdint>

#include "device/cuda/cuda_args.h"
#include "device/fifo.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

class CudaPlatform {
 public:
  static constexpr uint32_t kPollsPerCheck = 64;
  // How long a wait on a NET connection keeps looking after its peer's process exited (PeerRef::
  // proxied): the proxy reports the close once it has landed what the peer sent.
  static constexpr uint64_t kProxiedExitGraceNs = 1000000000ull;

  // blockFailed: a word in the block's shared memory, zeroed (and the zero made visible with a
  // barrier) before any thread builds its platform. sendStaging0/1 and recvStaging: shared-memory
  // buffers of kMaxLlStepPayload bytes, 16-byte aligned (null where the protocol needs none).
  // Every thread of the block builds its own CudaPlatform over the same shared words.
  __device__ CudaPlatform(const CudaWaitArgs& waits, uint32_t* blockFailed, void* sendStaging0 = nullptr,
                          void* sendStaging1 = nullptr, void* recvStaging = nullptr)
      : blockFailed_(blockFailed),
        abortFlag_(waits.abortFlag),
        peerExited_(waits.peerExited),
        status_(waits.status),
        sendStaging_{sendStaging0, sendStaging1},
        recvStaging_(recvStaging),
        timeoutNs_(waits.timeoutNs),
        onePoller_(waits.onePoller) {}

  // The channel a failure names, where it is not the block's index (a fused launch's blocks serve
  // several ranks' channels: cuda_args.h).
  __device__ void nameChannel(int c) { channel_ = c; }

  __device__ int tid() const { return static_cast<int>(threadIdx.x); }
  __device__ int nthreads() const { return static_cast<int>(blockDim.x); }

  // The non-aligned form of __syncthreads (barrier.sync 0): after a failure the threads of one
  // warp may reach it divergently, which the .aligned form used by __syncthreads does not allow.
  __device__ void barrier() {
    asm volatile("barrier.sync 0;" ::: "memory");
    publishing_ = *static_cast<volatile uint32_t*>(blockFailed_) == 0;
  }

  // True when v is true on every thread of the block: a barrier with an AND (the non-aligned
  // barrier.red, as barrier() and for the same reason), so the threads take one decision.
  __device__ bool allAgree(bool v) {
    uint32_t all;
    asm volatile(
        "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 q, %1, 0;\n\tbarrier.red.and.pred p, 0, q;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(all)
        : "r"(static_cast<uint32_t>(v))
        : "memory");
    publishing_ = *static_cast<volatile uint32_t*>(blockFailed_) == 0;
    return all != 0;
  }

  __device__ static uint64_t loadAcquire(const uint64_t* p) {
    return cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*const_cast<uint64_t*>(p))
        .load(cuda::memory_order_acquire);
  }
  __device__ static uint64_t loadRelaxed(const uint64_t* p) {
    return cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*const_cast<uint64_t*>(p))
        .load(cuda::memory_order_relaxed);
  }
  __device__ void storeRelease(uint64_t* p, uint64_t v) const {
    if (publishing_) cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*p).store(v, cuda::memory_order_release);
  }
  __device__ void storeRelaxed(uint64_t* p, uint64_t v) const {
    if (publishing_) cuda::atomic_ref<uint64_t, cuda::thread_scope_system>(*p).store(v, cuda::memory_order_relaxed);
  }

  // LL send staging alternates between two buffers, one per step: a thread may start filling
  // step k+1 while a sibling still copies step k into the FIFO lines (ProtoLL::postSend reads
  // lines, reduceCopy writes elements, so the two steps' thread-to-byte maps differ). Every thread
  // calls this once per LL send step (ProtoLL::acquireSend), so all threads alternate in step.
  __device__ void* sendStaging() {
    void* s = sendStaging_[sendFlip_];
    sendFlip_ ^= 1;
    return s;
  }
  __device__ void* recvStaging() const { return recvStaging_; }

  template <class Pred>
  __device__ bool waitUntil(Pred&& pred, const PeerRef& peer, const char* what) {
    WaitClock clock;
    for (uint32_t i = 1;; ++i) {
      if (pred()) return true;
      if (i % kPollsPerCheck == 0 && !healthy(peer, what, clock)) return false;
    }
  }

  // A wait every thread of the block makes alike, on one word (protocols.h waitForStep: a Simple
  // step's head or tail). With onePoller (the default), thread 0 polls and the others wait at a
  // barrier, then read the word once themselves (true by then: the words only grow). 512 threads
  // polling one word with system-scope loads, and reading the mapped abort word in their slow
  // paths, load the memory system the copies need: on an H200 4 ranks' 1 GiB allreduce then moved
  // 19 GB/s instead of 283 (docs/lab/2026-11-27.md). Every thread enters every such wait (waitsAsBlock). A
  // failed wait leaves thread 0 without a barrier (see Failure above): its siblings are released
  // when it exits, and see `failed`.
  __device__ bool waitsAsBlock() const { return onePoller_; }
  template <class Pred>
  __device__ bool waitUniform(Pred&& pred, const PeerRef& peer, const char* what) {
    if (!onePoller_) return waitUntil(pred, peer, what);
    if (tid() == 0 && !waitUntil(pred, peer, what)) return false;
    barrier();
    if (failed()) return false;
    if (tid() != 0) (void)pred();
    return true;
  }

  // For engines that poll several connections (collectives/p2p.h): one round that moved nothing;
  // false once the wait has failed. A block never sleeps, so `ready` (the host's parking hint) is
  // unused. Every kPollsPerCheck-th round runs the slow path; the deadline counts from the first
  // idle round after the last progress (the engine restarts *iteration at 0 when a step moves).
  __device__ bool idle(uint32_t* iteration, const PeerRef& peer, const char* what, bool (*)(void*) = nullptr,
                       void* = nullptr) {
    const bool check = checksHealth(*iteration);
    if (++*iteration == 1) idleClock_ = WaitClock{};
    return !check || healthy(peer, what, idleClock_);
  }
  // Whether idle, called with *iteration == rounds, runs the slow path (the engine names the next
  // waiting peer at each).
  __device__ static bool checksHealth(uint32_t rounds) { return (rounds + 1) % kPollsPerCheck == 0; }

  // Direct's peer memory (collectives/direct.h). Ranks of one process share one unified address
  // space, and with peer access on, a peer GPU's buffer is loaded and stored through the peer's
  // own pointer: that is what peerPointer returns, and what the copies read and write. Ranks in
  // other processes would need their buffers mapped (CUDA IPC: a cudaIpcGetMemHandle of each
  // buffer, exchanged, cudaIpcOpenMemHandle here) and their addresses translated: not done (the
  // planner takes Direct only where every rank is on one device, core/init.cc).
  __device__ const void* peerPointer(int, const void* remote) const { return remote; }
  // The block's threads copy (16-byte packs where aligned), then meet at a barrier: on return the
  // copy is complete and ordered before thread 0's next publish (a release, cumulative).
  __device__ bool readPeer(int, const void* remote, void* dst, size_t bytes) {
    copyBytes(remote, dst, bytes);
    return !failed();
  }
  __device__ bool writePeer(int, const void* src, void* remote, size_t bytes) {
    copyBytes(src, remote, bytes);
    return !failed();
  }

  __device__ void failStepMismatch(const PeerRef& peer, uint64_t sent, uint64_t expected) {
    fail(ccInvalidUsage, CudaFailReason::kStepMismatch, peer, "data", sent, expected);
  }

  // Records a failure (the launch's first one wins) and stops the block.
  __device__ void fail(ccResult_t code, CudaFailReason reason, const PeerRef& peer, const char* what,
                       uint64_t got = 0, uint64_t expected = 0) {
    *static_cast<volatile uint32_t*>(blockFailed_) = 1;
    publishing_ = false;
    __threadfence_block();
    // Blocks of one launch run on one device, whose atomics on mapped memory are atomic among
    // themselves (not against the host, which only reads after `code`).
    if (atomicCAS(&status_->claimed, 0u, 1u) != 0u) return;
    status_->reason = static_cast<uint32_t>(reason);
    status_->channel = channel_ >= 0 ? channel_ : static_cast<int32_t>(blockIdx.x);
    status_->peerRank = peer.rank;
    status_->got = got;
    status_->expected = expected;
    size_t n = 0;
    for (; what[n] != '\0' && n + 1 < sizeof(status_->what); ++n) status_->what[n] = what[n];
    status_->what[n] = '\0';
    __threadfence_system();  // the record before the code that announces it
    *static_cast<volatile uint32_t*>(&status_->code) = static_cast<uint32_t>(code);
    __threadfence_system();
  }

  // True once any thread of the block has failed.
  __device__ bool failed() const { return *static_cast<volatile uint32_t*>(blockFailed_) != 0; }

  // Tells the peer this side will not come (as the host executor's failOp does), so it fails
  // fast instead of waiting for its deadline.
  // The first departure's cause stays (see ccComm::leaveConnections); `self` is blamed here.
  __device__ static void leave(const PeerRef& peer, int self, GoneReason reason) {
    if (peer.ownState != nullptr) {
      uint32_t active = kPeerActive;
      cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*peer.ownState)
          .compare_exchange_strong(active, goneState(self, reason), cuda::memory_order_release,
                                   cuda::memory_order_relaxed);
    }
  }

 private:
  // One wait's deadline: started at its first slow-path check (started = false until then).
  struct WaitClock {
    bool started = false;
    bool peerExitSeen = false;   // a peer's process had exited at an earlier slow-path check
    int peerExitRank = -1;       // that peer (an idle run names its waiting peers in turn)
    uint64_t peerExitSince = 0;  // globaltimer at the first
    uint64_t since = 0;  // globaltimer at that check
  };

  // Out of line: Direct calls it from many places, and a copy of the loop in each cost nvcc more
  // time than the call costs a bulk copy.
  __device__ __noinline__ void copyBytes(const void* src, void* dst, size_t bytes) {
    reduceCopy(FuncSum<uint8_t>(), tid(), nthreads(), bytes, static_cast<const uint8_t*>(src), false,
               static_cast<const uint8_t*>(nullptr), false, static_cast<uint8_t*>(dst), static_cast<uint8_t*>(nullptr),
               false);
    barrier();
  }

  // The GPU's nanosecond timer (PTX %globaltimer): the same on every SM, so a comparison of two
  // reads is meaningful wherever the block runs.
  __device__ static uint64_t globalTimerNs() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }

  // Slow path of every wait: a sibling thread or another block failed, abort, peer gone, deadline.
  __device__ bool healthy(const PeerRef& peer, const char* what, WaitClock& clock) {
    if (failed()) return false;
    if (*static_cast<volatile uint32_t*>(&status_->claimed) != 0u) {
      *static_cast<volatile uint32_t*>(blockFailed_) = 1;
      publishing_ = false;
      return false;
    }
    if (abortFlag_ != nullptr && *abortFlag_ != 0u) {
      fail(ccInvalidUsage, CudaFailReason::kAborted, peer, what);
      return false;
    }
    if (peerExited_ != nullptr && peer.rank >= 0 &&
        cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(peerExited_[peer.rank])
                .load(cuda::memory_order_acquire) != 0u) {
      // What the peer wrote into this device before it exited is visible after this acquire: the
      // wait looks once more before it fails. Over NET its last steps may still be in this host's
      // socket buffers, which the proxy lands before it reports the close: they get a grace.
      // A point-to-point batch names its waiting peers in turn: another peer's exit, seen while the
      // first one seen waits for its second look, is judged at its own turn after that one's.
      const uint64_t now = globalTimerNs();
      if (!clock.peerExitSeen) {
        clock.peerExitSeen = true;
        clock.peerExitRank = peer.rank;
        clock.peerExitSince = now;
      } else if (clock.peerExitRank == peer.rank &&
                 (!peer.proxied || now - clock.peerExitSince >= kProxiedExitGraceNs)) {
        fail(ccRemoteError, CudaFailReason::kPeerExited, peer, what);
        return false;
      }
    }
    if (peer.peerState != nullptr) {
      const uint32_t state =
          cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*peer.peerState).load(cuda::memory_order_acquire);
      if (isGone(state)) {
        fail(ccRemoteError, CudaFailReason::kPeerGone, peer, what, state);  // the state names who and why
        return false;
      }
    }
    if (timeoutNs_ != 0) {
      const uint64_t now = globalTimerNs();
      if (!clock.started) {
        clock.started = true;
        clock.since = now;
      } else if (now - clock.since >= timeoutNs_) {
        fail(ccTimeout, CudaFailReason::kTimeout, peer, what);
        return false;
      }
    }
    return true;
  }

  uint32_t* blockFailed_;
  const volatile uint32_t* abortFlag_;
  uint32_t* peerExited_;  // CudaWaitArgs::peerExited
  CudaKernelStatus* status_;
  void* sendStaging_[2];
  void* recvStaging_;
  uint64_t timeoutNs_;  // per wait; 0 = none
  bool onePoller_;      // waitUniform: thread 0 polls for the block
  int32_t channel_ = -1;  // nameChannel; -1: the block's index
  int sendFlip_ = 0;
  bool publishing_ = true;
  WaitClock idleClock_;  // idle(): the current run of idle rounds
};

}  // namespace collcomm::detail
