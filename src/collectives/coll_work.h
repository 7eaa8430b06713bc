// What one channel of one collective is asked to do: the portable description the executors hand
// to the ring algorithms (plain data, no pointers into the communicator).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

namespace collcomm::detail {

struct RingWork {
  const void* sendbuff;
  void* recvbuff;
  // AllReduce/Broadcast/Reduce: elements of the whole buffer. AllGather/ReduceScatter: per rank.
  size_t count;
  // This channel's share: elements [partOffset, partOffset + partCount) of the buffer (or of each
  // rank's block for AllGather/ReduceScatter).
  size_t partOffset;
  size_t partCount;
  // Elements each rank handles per pipeline round (a multiple of the protocol's step).
  size_t chunkElems;
  int root;            // Broadcast/Reduce: the root's rank
  int nranks;
  int ringPos;         // this rank's position on the ring
  const int* ringRanks;  // rank at each ring position; the ring sends to position + 1
};

CC_HD inline int ringMod(int x, int n) { return ((x % n) + n) % n; }
CC_HD inline size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

// Position of `rank` on the ring.
CC_HD inline int ringPosOf(const RingWork& w, int rank) {
  for (int i = 0; i < w.nranks; ++i)
    if (w.ringRanks[i] == rank) return i;
  return 0;
}

}  // namespace collcomm::detail
