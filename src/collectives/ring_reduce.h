// Ring Reduce: a pipelined chain root+1 -> root+2 -> ... -> root along the ring, each hop adding
// its contribution; only the root stores (and post-processes) the result.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void ringReduce(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const int n = w.nranks;
  const int hop = ringMod(w.ringPos - ringPosOf(w, w.root), n);  // 0 at the root, 1 starts
  const size_t end = w.partOffset + w.partCount;
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    if (hop == 1)
      prims.send(src + base, len);
    else if (hop == 0)
      prims.recvReduceCopy(src + base, dst + base, len, /*post=*/true);
    else
      prims.recvReduceSend(src + base, len);
  }
}

}  // namespace collcomm::detail
