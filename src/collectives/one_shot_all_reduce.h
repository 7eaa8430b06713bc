// One-shot AllReduce for two ranks: each rank sends its whole input to the other and reduces the
// peer's input with its own. One hand-off between the ranks instead of the ring's two, at the cost
// of each rank reducing every element (the ring splits that work): the planner picks it for small
// and mid-sized messages.
//
// Both ranks get the same bits: they compute peer (+) own, which for two operands is own (+) peer
// on the other rank, and every reduction here is commutative bit for bit (IEEE addition and
// multiplication, min, max, integer arithmetic; pre-ops apply to each input alike, post-ops to the
// sum). For more ranks the order of operands would differ between ranks here, so more ranks
// gather every input over per-peer connections and reduce in rank order (core/enqueue.cc).
//
// Chunks are sent before they are received, each at most half the FIFO, so both ranks sending at
// once never wait on each other's space.
#pragma once

#include "collectives/coll_work.h"
#include "collectives/ring_all_reduce.h"

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

// AllReduce by the algorithm the planner chose (RingWork::algo).
template <class T, class Prims>
CC_HD void allReduce(Prims& prims, const RingWork& w) {
  if (w.algo == Algorithm::kOneShot && w.nranks == 2)
    oneShotAllReduce<T>(prims, w);
  else
    ringAllReduce<T>(prims, w);
}

}  // namespace collcomm::detail
