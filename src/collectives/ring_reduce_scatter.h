// Ring ReduceScatter: rank r's result is the reduction of every rank's block r. Block b travels
// the ring starting just after b's owner, picking up each rank's contribution, and lands on its
// owner after n-1 steps.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void ringReduceScatter(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const int n = w.nranks;
  const int p = w.ringPos;
  const size_t end = w.partOffset + w.partCount;
  auto block = [&](int pos) { return static_cast<size_t>(w.ringRanks[pos]) * w.count; };
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    prims.send(src + block(ringMod(p - 1, n)) + base, len);
    for (int j = 2; j < n; ++j) prims.recvReduceSend(src + block(ringMod(p - j, n)) + base, len);
    prims.recvReduceCopy(src + block(p) + base, dst + base, len, /*post=*/true);
  }
}

}  // namespace collcomm::detail
