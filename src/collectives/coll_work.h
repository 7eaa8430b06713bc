// What one channel of one collective is asked to do: the portable description the executors hand
// to the ring algorithms (plain data, no pointers into the communicator).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/coll_list.h"
#include "common/host_device.h"
#include "device/fifo.h"

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
  Algorithm algo;      // AllReduce: Ring or OneShot (two ranks); the others are rings
  int root;            // Broadcast/Reduce: the root's rank
  int nranks;
  int ringPos;         // this rank's position on the ring
  const int* ringRanks;  // rank at each ring position; the ring sends to position + 1
};

// One channel's tree as the tree algorithms see it (plan/trees.h): this rank's connections to its
// parent and up to two children, null where there is none (the root has no parent, a leaf no
// children; children[1] only with children[0]). Every rank's tree connections cut data into steps
// of one size (core agrees on it when it connects them).
struct TreeLinks {
  SendConn* toParent;
  RecvConn* fromParent;
  SendConn* toChild[2];
  RecvConn* fromChild[2];
};

// x mod n in [0, n). Ring arithmetic almost always lands within one lap, where no division is
// needed (a division costs more than the rest of a small operation's ring bookkeeping).
CC_HD inline int ringMod(int x, int n) {
  if (x >= 0) return x < n ? x : x % n;
  return x >= -n ? x + n : ((x % n) + n) % n;
}
CC_HD inline size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

// Steps per pipeline chunk: half the FIFO, so a rank can fill one half while the next drains the
// other. Every executor must chunk alike: the ranks of one ring may run on different executors.
inline constexpr size_t kChunkSteps = kNumSteps / 2;

// Channel c's share of `count` elements when the work is split over nChannels rings.
CC_HD inline void channelPart(size_t count, int nChannels, int c, size_t* offset, size_t* n) {
  if (nChannels == 1) {  // no division for the common case
    *offset = 0;
    *n = count;
    return;
  }
  const size_t per = (count + nChannels - 1) / nChannels;
  *offset = minSize(per * c, count);
  *n = minSize(per, count - *offset);
}

// Position of `rank` on the ring.
CC_HD inline int ringPosOf(const RingWork& w, int rank) {
  for (int i = 0; i < w.nranks; ++i)
    if (w.ringRanks[i] == rank) return i;
  return 0;
}

}  // namespace collcomm::detail
