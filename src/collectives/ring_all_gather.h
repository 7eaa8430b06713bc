// Ring AllGather: each rank's block enters the ring at its owner and is copied along n-1 hops;
// every rank stores each block as it passes.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void ringAllGather(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const int n = w.nranks;
  const int p = w.ringPos;
  const size_t end = w.partOffset + w.partCount;
  auto block = [&](int pos) { return static_cast<size_t>(w.ringRanks[pos]) * w.count; };
  const bool inPlace = src == dst + block(p);
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    if (inPlace)
      prims.send(src + base, len);
    else
      prims.copySend(src + base, dst + block(p) + base, len, /*post=*/false);
    for (int j = 1; j < n - 1; ++j) prims.recvCopySend(dst + block(ringMod(p - j, n)) + base, len);
    prims.recv(dst + block(ringMod(p + 1, n)) + base, len, /*post=*/false);
  }
}

}  // namespace collcomm::detail
