// One-shot AllReduce: every rank hands its whole input to every other and reduces all inputs
// itself. One hand-off between ranks instead of the ring's 2(n-1), at the cost of each rank
// reducing every element (the ring splits that work) and, beyond two ranks, n-1 sends of the
// whole input: the planner picks it for small and mid-sized messages, where the hand-offs are
// the cost.
//
// Two ranks (oneShotAllReduce, over the ring's Primitives: the ring of two joins the pair both
// ways): each sends its input to the other and reduces the peer's input with its own. Both get
// the same bits: they compute peer (+) own, which for two operands is own (+) peer on the other
// rank, and every reduction here is commutative bit for bit (IEEE addition and multiplication,
// min, max, integer arithmetic; pre-ops apply to each input alike, post-ops to the sum). Chunks
// are sent before they are received, each at most half the FIFO, so both ranks sending at once
// never wait on each other's space.
//
// Any number of ranks (oneShotAllReduceAny): with more than two operands the order would differ
// between ranks, so every rank gathers every input over the per-peer collective connections (the
// point-to-point engine, p2p.h, all peers at once) and reduces them in rank order
// (rank_order_reduce.h): every rank computes the same bits.
#pragma once

#include <cstddef>

#include "collectives/coll_work.h"
#include "collectives/p2p.h"
#include "collectives/rank_order_reduce.h"
#include "collectives/ring_all_reduce.h"
#include "device/reduce_copy.h"
#include "device/transfer.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void oneShotAllReduce(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const size_t end = w.partOffset + w.partCount;
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    prims.send(src + base, len);
    prims.recvReduceCopy(src + base, dst + base, len, /*post=*/true);
  }
}

// One rank's part of the one-shot AllReduce on any number of ranks. Scratch comes from the
// executor, so the algorithm allocates nothing: the host executor's grow on first need
// (HostExecutor, host_one_shot.cc); the CUDA kernel's transfers live in its threads' registers
// and its gather buffer would be device memory the CUDA executor owns (one_shot_kernel.cu).
struct OneShotWork {
  const void* sendbuff;
  void* recvbuff;  // may be sendbuff (in place)
  size_t count;    // elements
  int rank;
  int nranks;
  const ExecPeerConn* peers;  // nranks entries, connected (this rank's own unused)
  void* gather;               // nranks * count elements: slot p receives rank p's input
  ExecTransfer* transfers;    // 2 * (nranks - 1) entries, overwritten
  // The reduction's pre-op differs by rank (a ccRedOpCreatePreMulSum op: each rank's own scalar;
  // AVG's, built in, is everyone's): each rank applies its own to what it sends.
  bool ownPreOp;
  uint32_t callTag;  // the AllReduce's (call_tag.h), which every step carries
};

// Every input to every rank (the engine runs the 2(n-1) transfers together, so no order of
// sends can deadlock), then recvbuff = in0 (+) in1 (+) ... (+) in{n-1} in rank order, pre-ops
// on every input and the post-op on the result. A pre-op of each rank's own (w.ownPreOp) is
// applied by the rank whose input it is: it pre-processes its input into its slot and sends that,
// as the ring's sends do. False once a wait failed (the platform holds why; the threads leave
// without another barrier, as the engine does).
template <class T, class Fn, class Platform>
CC_HD bool oneShotAllReduceAny(Platform& plat, const Fn& fn, const OneShotWork& w) {
  T* gather = static_cast<T*>(w.gather);
  const T* own = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  T* ownSlot = gather + w.count * w.rank;
  const bool ownPreOp = Fn::kHasPreOp && w.ownPreOp;
  // In place, the passes before this rank's operand overwrite it (ranks 0 and 1 are read by the
  // first pass before it writes): keep a copy in this rank's own slot. The sends read the
  // input before any pass runs. With a pre-op of its own, the slot holds the pre-processed input,
  // sent from there.
  if (ownPreOp || (own == dst && w.rank >= 2)) {
    reduceCopy(fn, plat.tid(), plat.nthreads(), w.count, own, ownPreOp, static_cast<const T*>(nullptr), false, ownSlot,
               static_cast<T*>(nullptr), false);
    own = ownSlot;
    if (ownPreOp) plat.barrier();  // the slot is written before any thread sends it
  }
  const void* sent = ownPreOp ? static_cast<const void*>(ownSlot) : w.sendbuff;
  const size_t bytes = w.count * sizeof(T);
  size_t n = 0;
  for (int p = 0; p < w.nranks; ++p) {
    if (p == w.rank) continue;
    w.transfers[n++] = ExecTransfer{true, p, const_cast<void*>(sent), bytes, w.peers[p].send, nullptr, 0};
    w.transfers[n++] = ExecTransfer{false, p, gather + w.count * p, bytes, nullptr, w.peers[p].recv, 0};
  }
  P2pEngine<Platform> engine(plat, w.transfers, n, w.callTag);
  if (!engine.run()) return false;
  plat.barrier();  // every slot (and the copy above) written before any thread reduces
  reduceInRankOrder<T>(
      plat, fn, w.nranks, [&](int p) { return p == w.rank ? own : static_cast<const T*>(gather + w.count * p); }, dst,
      w.count, /*pre=*/!ownPreOp);
  return true;
}

// AllReduce by the algorithm the planner chose (RingWork::algo).
template <class T, class Prims>
CC_HD void allReduce(Prims& prims, const RingWork& w) {
  if (w.algo == Algorithm::kOneShot && w.nranks == 2)
    oneShotAllReduce<T>(prims, w);
  else
    ringAllReduce<T>(prims, w);
}

}  // namespace collcomm::detail
