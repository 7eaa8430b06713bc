// The host executor's platform policy: what the portable device code (protocols, primitives,
// algorithms) needs from "the hardware" when a host thread plays the part of a thread block.
//
// Contract shared with the CUDA platform:
//   tid(), nthreads(), barrier()             the cooperating threads (here: one)
//   allAgree(v) -> bool                      v held on every thread (a barrier; here: v)
//   loadAcquire/loadRelaxed/storeRelease/storeRelaxed on uint64_t words shared with peers
//   waitUntil(pred, peer, what) -> bool      false once the wait has failed; the failure is recorded
//   failStepMismatch(peer, sent, expected)   records a step whose size word (call_tag.h) differs
//   sendStaging(), recvStaging()             kMaxLlStepPayload bytes each, for LL
//   peerPointer(rank, remote), readPeer(rank, remote, dst, bytes), writePeer(rank, src, remote,
//   bytes)                                   a peer's memory, for Direct (collectives/direct.h
//                                            states the contract; CUDA: not wired yet)
//
// Waits spin (cpu pause) for COLLCOMM_SPIN_COUNT polls, then yield the core between polls, so more
// ranks than cores still progress; after parkAfterNs of that they park (sleep on the connection's
// Doorbell until the peer publishes, or kParkNs), so a machine's other threads get the core. Past
// the spin phase they check, every few milliseconds: the communicator's abort flag, the peer's
// PeerState word, whether the peer process still lives (same host only), and the deadline. Those
// checks are the only syscalls on the data path, and only while waiting.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "common/deadline.h"
#include "common/futex.h"
#include "common/status.h"
#include "device/executor.h"
#include "device/fifo.h"
#include "device/host/core_distance.h"
#include "device/host/stream_store.h"

namespace collcomm::detail {

// What a host-executed operation waits under: built by the host executor from its ExecSetup and
// the operation's ExecOp and plan (device/executor.h).
struct HostWaitContext {
  const std::atomic<uint32_t>* abortFlag = nullptr;
  Deadline deadline;      // unset (never): timeoutSeconds from the first slow wait
  int timeoutSeconds = 0;
  int spinCount = 2000;
  bool streamResults = false;  // write results to user buffers with streaming stores (plan choice)
  bool streamSteps = false;    // FIFO steps may be written with streaming stores (plan choice) ...
  bool streamStepsAlways = false;  // ... whatever the receiver's verdict (COLLCOMM_STEP_STREAM=always)
  const char* opName = "operation";
  int rank = -1;
  int nranks = 0;
  const char* const* hostNames = nullptr;  // per rank, for naming a root cause
  ExecFailure* failure = nullptr;          // where to say who caused a failure (may be null)
  // Per rank, where its memory lives, for Direct's peer copies (readPeer/writePeer; null: every
  // rank is a thread of this process).
  const ExecPeer* peers = nullptr;
  // Past the spin phase, a wait calls this between polls (null: never): one round of the
  // process's network progress on the waiting thread (proxyRoundHere); true if it ran one. A
  // wait that runs rounds itself yields its core only every 16th poll (the proxy thread stands
  // aside meanwhile); one that finds a round under way yields at once.
  bool (*progress)() = nullptr;
  // After a Simple step of at least sendNowMinBytes is published to a proxied connection (null:
  // never): the process's network sends on the publishing thread (proxySendsHere), so the step
  // leaves while it is still in this core's cache and the peer gets it without waiting for this
  // side's next wait. Smaller steps are a small message's, whose next wait comes at once.
  bool (*sendNow)() = nullptr;
  size_t sendNowMinBytes = 0;
  // A wait that has yielded its core for this long (ns) parks: it sleeps until the peer publishes
  // (the peer's wakeParked) or kParkNs pass, so other threads of the machine get the core
  // (0: never; also where the parking fence is missing, and over NET, whose waits may be the ones
  // running the network's progress).
  int64_t parkAfterNs = 0;
  // This machine's ranks alone outnumber its CPUs (ExecSetup::spinCount is 0): a wait that runs
  // network rounds itself yields after each (HostPlatform::roundsPerYield).
  bool yieldEachRound = false;
};

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

class HostPlatform {
 public:
  // The first polls of a spin run back to back: a pause costs 25 ns on this project's AMD VMs
  // (140 on recent Intel cores), and a step that lands just after one waits that long; past these
  // polls the wait is long enough for the pause's gentler load on the core to matter more.
  static constexpr int kTightPolls = 128;

  explicit HostPlatform(const HostWaitContext& ctx) : ctx_(ctx) {}

  int tid() const { return 0; }
  int nthreads() const { return 1; }
  void barrier() {}
  static bool allAgree(bool v) { return v; }

  static uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  static uint64_t loadRelaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
  static void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
  static void storeRelaxed(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
  // A relaxed load of a word the connection's sender has just written ahead of a step of `bytes`;
  // for large steps, timed to gauge how far its core is (core_distance.h).
  static uint64_t loadFromWriter(const uint64_t* p, const RecvConn& c, size_t bytes) {
    if (bytes < kDistanceProbeMinBytes) return loadRelaxed(p);
    const uint64_t t0 = distanceClockStart();
    const uint64_t v = loadRelaxed(p);
    noteWriterLoad(c, distanceClockEnd() - t0);
    return v;
  }

  // Results the primitives store into the user's buffers, and the steps they store into FIFOs,
  // bypass the cache (stream_store.h).
  bool streamsResults() const { return ctx_.streamResults; }
  // For this operation's steps to `c`: when the plan allows it and the receiver finds this core
  // far (read once per operation; core_distance.h), or the user asked for always.
  bool streamsStepsTo(const SendConn& c) const {
    return ctx_.streamSteps && (ctx_.streamStepsAlways || receiverFindsFar(c));
  }
  template <class Fn, class T>
  void reduceCopyStreaming(const Fn& fn, size_t n, const T* src0, bool pre0, const T* src1, bool pre1, T* dst0,
                           bool stream0, T* dst1, bool stream1, bool post) {
    collcomm::detail::reduceCopyStreaming(fn, n, src0, pre0, src1, pre1, dst0, stream0, dst1, stream1, post);
  }

  // Something the other side of `peer`'s connection may wait for was published (protocols.h).
  static void published(const PeerRef& peer) { wakeParked(peer.wakeBell); }

  // A Simple step of `bytes` was published to `c` (protocols.h postSend).
  void stepPublished(const SendConn& c, size_t bytes) {
    if (c.peer.proxied && ctx_.sendNow != nullptr && bytes >= ctx_.sendNowMinBytes) ctx_.sendNow();
  }

  void* sendStaging() { return sendStaging_; }
  void* recvStaging() { return recvStaging_; }

  template <class Pred>
  bool waitUntil(Pred&& pred, const PeerRef& peer, const char* what) {
    if (!isOk(status_)) return false;
    for (int i = 0; i < ctx_.spinCount; ++i) {
      if (pred()) return true;
      if (i >= kTightPolls) cpuRelax();
    }
    auto recheck = [](void* p) { return (*static_cast<std::remove_reference_t<Pred>*>(p))(); };
    const bool mayPark = ctx_.parkAfterNs > 0 && peer.waitBell != nullptr;
    const Deadline::Clock::time_point parkAt =
        mayPark ? Deadline::Clock::now() + std::chrono::nanoseconds(ctx_.parkAfterNs) : Deadline::Clock::time_point{};
    for (uint32_t i = 0;; ++i) {
      if (pred()) return true;
      if (mayPark && (i & 3) == 3 && Deadline::Clock::now() >= parkAt)
        park(*peer.waitBell, pred);
      else if (!progressHere() || (i & roundsPerYield()) == roundsPerYield())
        sched_yield();
      if ((i & 7) == 7 && !healthy(peer, what, {recheck, &pred})) return false;
    }
  }

  // A wait that runs the network's progress rounds itself yields its core after this many rounds
  // in a row, less one (a mask). Every 16th where each rank has a core (the only other thread
  // there is its own proxy, which stands aside: a yield would only delay the next round). Where
  // the machine's ranks alone outnumber its CPUs, after every round: a round costs a socket read
  // per connection, and a rank with many connections (a tree's inner rank: parent, two children,
  // the ring) held the core for 16 of them while the ranks it waited for could not run
  // (docs/lab/2026-11-27.md, "Why the tree lost at 8 B").
  uint32_t roundsPerYield() const { return ctx_.yieldEachRound ? 0 : 15; }

  // The longest one park sleeps: a bound on how late a waiter notices an abort, a peer's
  // departure or its deadline (the publishers it waits for wake it at once).
  static constexpr int64_t kParkNs = 2'000'000;

  // For engines that poll several connections (collectives/p2p.h): one idle round; false once the
  // wait has failed.
  // `ready` (may be null): when the engine waits on `peer`'s connection alone, whether what it
  // waits for is there; with it a long idle parks on the connection like waitUntil.
  bool idle(uint32_t* iteration, const PeerRef& peer, const char* what, bool (*ready)(void*) = nullptr,
            void* readyArg = nullptr) {
    const uint32_t i = (*iteration)++;
    if (i == 0) graceGiven_ = kNoGrace;  // a new idle run: the engine restarts *iteration after progress
    if (static_cast<int>(i) < ctx_.spinCount) {
      cpuRelax();
      return true;
    }
    const bool mayPark = ready != nullptr && ctx_.parkAfterNs > 0 && peer.waitBell != nullptr;
    if (mayPark && static_cast<int>(i) == ctx_.spinCount)
      idleParkAt_ = Deadline::Clock::now() + std::chrono::nanoseconds(ctx_.parkAfterNs);
    if (mayPark && (i & 3) == 3 && idleParkAt_ != Deadline::Clock::time_point{} && Deadline::Clock::now() >= idleParkAt_) {
      auto pred = [&] { return ready(readyArg); };
      park(*peer.waitBell, pred);
    } else if (!progressHere() || (i & roundsPerYield()) == roundsPerYield()) {
      sched_yield();
    }
    // The caller's next round is the second look at a peer that left (see Recheck). The engine
    // names its waiting peers in turn: another peer seen gone while the first one seen waits for
    // its second look is judged at its own turn after that one's.
    auto oneMoreRound = [](void* self) {
      auto* plat = static_cast<HostPlatform*>(self);
      if (plat->graceGiven_ == kNoGrace) {
        plat->graceGiven_ = plat->graceFor_;
        return true;
      }
      return plat->graceGiven_ != plat->graceFor_;
    };
    graceFor_ = peer.rank;
    return !checksHealth(i) || healthy(peer, what, {oneMoreRound, this});
  }
  // Whether idle, called with *iteration == rounds, runs the slow path (the engine names the next
  // waiting peer at each).
  bool checksHealth(uint32_t rounds) const { return static_cast<int>(rounds) >= ctx_.spinCount && (rounds & 7) == 7; }

  // Before an operation: false (failure recorded) when the peer has already left. A waiting rank
  // notices a departure only when it has to wait; without this a rank whose peer failed the
  // previous operation could finish on what the peer sent before it left (one-shot algorithms
  // send everything up front), while the peer reported the failure.
  bool peerPresent(const PeerRef& peer, const char* what) {
    if (peer.peerState == nullptr || !isGone(__atomic_load_n(peer.peerState, __ATOMIC_ACQUIRE))) return true;
    return healthy(peer, what, {[](void*) { return false; }, nullptr});
  }

  void failStepMismatch(const PeerRef& peer, uint64_t sent, uint64_t expected);

  // Direct's peer memory (collectives/direct.h). A rank that is a thread of this process is read
  // and written through its own pointers; another process's memory only by copying.
  const void* peerPointer(int rank, const void* remote) const {
    return ctx_.peers == nullptr || ctx_.peers[rank].sameProcess ? remote : nullptr;
  }
  // Copies between this thread and rank's memory (rank may be this one): a memcpy within the
  // process (streaming stores, then a store fence, when the plan streams results: the copy is
  // ordered before what this thread publishes next), process_vm_readv/writev across processes
  // (transport/cma/peer_memory.h, one syscall, plain stores). False once it failed: the failure
  // recorded (its sentence names the operation, this rank and the peer) and the peer blamed.
  bool readPeer(int rank, const void* remote, void* dst, size_t bytes) {
    return copyPeer(rank, dst, const_cast<void*>(remote), bytes, false);
  }
  bool writePeer(int rank, const void* src, void* remote, size_t bytes) {
    return copyPeer(rank, const_cast<void*>(src), remote, bytes, true);
  }

  // Records an arbitrary failure (first one wins).
  void fail(Status status) {
    if (isOk(status_)) status_ = status;
  }
  Status status() const { return status_; }
  const HostWaitContext& context() const { return ctx_; }

 private:
  // A second look at what a wait waits for, taken when the peer has left: a peer leaves (its
  // PeerState turns gone, its process exits) only after what it published, so once its departure
  // is seen (acquire) everything it sent is visible, and a wait that is satisfied now is not a
  // failure. Without it, a peer that sends its last step and then goes away (ccCommDestroy closes
  // a NET connection) fails a receiver that checked for the step just before it landed.
  struct Recheck {
    bool (*fn)(void*);
    void* arg;
  };
  // Slow path of every wait: abort, peer gone, peer process dead, deadline.
  bool healthy(const PeerRef& peer, const char* what, Recheck again);
  void blame(int culprit, GoneReason reason) {
    if (ctx_.failure != nullptr) *ctx_.failure = ExecFailure{culprit, reason};
  }
  bool progressHere() const { return ctx_.progress != nullptr && ctx_.progress(); }
  bool copyPeer(int rank, void* local, void* remote, size_t bytes, bool intoPeer);
  // Sleeps on `bell` until rung or kParkNs pass, unless `pred` holds once parked is visible to
  // every publisher (parkingFence: a publish made before a publisher read `parked` as 0 is seen by
  // the check here, and one made after it rings).
  template <class Pred>
  static void park(Doorbell& bell, Pred& pred) {
    const uint32_t rings = __atomic_load_n(&bell.rings, __ATOMIC_ACQUIRE);
    __atomic_store_n(&bell.parked, 1u, __ATOMIC_RELAXED);
    parkingFence();
    if (!pred()) futexWait(&bell.rings, rings, kParkNs);
    __atomic_store_n(&bell.parked, 0u, __ATOMIC_RELAXED);
  }
  const char* hostOf(int rank) const {
    return ctx_.hostNames != nullptr && rank >= 0 && rank < ctx_.nranks ? ctx_.hostNames[rank] : "?";
  }

  const HostWaitContext& ctx_;
  Status status_ = kOk;
  Deadline::Clock::time_point nextLivenessCheck_{};
  // The operation's deadline: ctx_.deadline when the caller set one, else timeoutSeconds from the
  // first wait that left its spin phase.
  bool deadlineStarted_ = false;
  Deadline::Clock::time_point deadline_{};
  // idle(): when a wait that may park parks (set as it leaves its spin phase).
  Deadline::Clock::time_point idleParkAt_{};
  // idle(): the peer (rank) named now, and the one whose departure was granted one more round of
  // the caller's polling in this idle run.
  static constexpr int kNoGrace = -2;
  int graceFor_ = kNoGrace;
  int graceGiven_ = kNoGrace;
  alignas(64) unsigned char sendStaging_[kMaxLlStepPayload];
  alignas(64) unsigned char recvStaging_[kMaxLlStepPayload];
};

}  // namespace collcomm::detail
