// Ring AllReduce: a reduce-scatter around the ring (n-1 steps, each rank finishing one chunk), then
// an all-gather of the finished chunks (n-1 steps). Each rank moves 2(n-1)/n of the data.
//
// Per pipeline round the buffer range is cut into n chunks; at step j, position p works on chunk
// (p - j) mod n, so what p sends is exactly what p+1 expects next.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

template <class T, class Prims>
CC_HD void ringAllReduce(Prims& prims, const RingWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const int n = w.nranks;
  const int p = w.ringPos;
  const size_t end = w.partOffset + w.partCount;
  const size_t roundElems = static_cast<size_t>(n) * w.chunkElems;
  for (size_t base = w.partOffset; base < end; base += roundElems) {
    const size_t rem = minSize(roundElems, end - base);
    const size_t per = (rem + n - 1) / n;
    auto off = [&](int c) { return base + minSize(static_cast<size_t>(c) * per, rem); };
    auto len = [&](int c) { return minSize(per, rem - minSize(static_cast<size_t>(c) * per, rem)); };

    int c = ringMod(p - 1, n);
    prims.send(src + off(c), len(c));
    for (int j = 2; j < n; ++j) {
      c = ringMod(p - j, n);
      prims.recvReduceSend(src + off(c), len(c));
    }
    c = p;
    prims.recvReduceCopySend(src + off(c), dst + off(c), len(c), /*post=*/true);
    for (int j = 1; j < n - 1; ++j) {
      c = ringMod(p - j, n);
      prims.recvCopySend(dst + off(c), len(c));
    }
    c = ringMod(p + 1, n);
    prims.recv(dst + off(c), len(c), /*post=*/false);
  }
}

}  // namespace collcomm::detail
