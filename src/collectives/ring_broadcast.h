// Ring Broadcast: a pipelined chain root -> root+1 -> ... -> root-1 along the ring.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void ringBroadcast(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const int n = w.nranks;
  const int hop = ringMod(w.ringPos - ringPosOf(w, w.root), n);  // 0 at the root
  const size_t end = w.partOffset + w.partCount;
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    if (hop == 0) {
      if (src == dst)
        prims.send(src + base, len);
      else
        prims.copySend(src + base, dst + base, len, /*post=*/false);
    } else if (hop == n - 1) {
      prims.recv(dst + base, len, /*post=*/false);
    } else {
      prims.recvCopySend(dst + base, len);
    }
  }
}

}  // namespace collcomm::detail
