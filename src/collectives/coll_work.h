// The work items between the plan and the algorithms, plain data of fixed layout that host and
// device code share: what one collective asks of this rank (CollWork, which every executor's
// arguments carry), and what one channel of it is asked to do (RingWork, which the ring
// algorithms run). channelWorkOf lowers the first to the second, the one place every executor
// (host ring and tree runners, CUDA ring kernel) splits a collective over its channels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "common/host_device.h"
#include "device/call_tag.h"
#include "device/dtypes.h"
#include "device/fifo.h"
#include "device/op_arg.h"

namespace collcomm::detail {

// One collective on this rank, as the plan lowered it (device/executor.h collWorkOf). The host
// executor's HostCollArgs and the CUDA kernels' arguments (cuda_args.h) derive from it and add
// only where their channels and waits live.
struct CollWork {
  CollKind kind;
  Algorithm algo;  // the plan's (ExecColl::algo)
  Protocol proto;
  ccDataType_t dtype;
  RedOpSpec op;  // reduction (ignored by Broadcast/AllGather)
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // as RingWork::count
  int root;      // Broadcast/Reduce
  int nranks;
  int nChannels;  // the first nChannels channels of the communicator
};

// The tag every step of collective w carries (device/call_tag.h), as the executor runs it (after
// lowerToBytes, which leaves type and reduction out of the tags of Broadcast and AllGather anyway).
CC_HD constexpr uint32_t callTagOf(const CollWork& w) { return callTagOf(w.kind, w.dtype, w.op.kind, w.root); }

// Broadcast and AllGather move data without combining it: they run as bytes, one instantiation
// for every type (both executors).
CC_HD inline void lowerToBytes(CollWork* w) {
  w->count *= dtypeSize(w->dtype);
  w->dtype = ccUint8;
  w->op = RedOpSpec{RedOpKind::kSum, 0};
}

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

// Channel c's RingWork of collective a: its share of the elements (channelPart) and chunks of
// kChunkSteps steps of stepElems elements (the channel's primitives' step; 0 where no step moves,
// one rank alone). ringRanks (a.nranks entries) and ringPos: the channel's ring order and this
// rank's place on it (null and 0 for a channel that is not a ring: the tree takes its share).
CC_HD inline RingWork channelWorkOf(const CollWork& a, int c, int ringPos, const int* ringRanks, size_t stepElems) {
  RingWork w{};
  w.sendbuff = a.sendbuff;
  w.recvbuff = a.recvbuff;
  w.count = a.count;
  channelPart(a.count, a.nChannels, c, &w.partOffset, &w.partCount);
  w.chunkElems = stepElems * kChunkSteps;
  w.algo = a.algo;
  w.root = a.root;
  w.nranks = a.nranks;
  w.ringPos = ringPos;
  w.ringRanks = ringRanks;
  return w;
}

// Position of `rank` on the ring.
CC_HD inline int ringPosOf(const RingWork& w, int rank) {
  for (int i = 0; i < w.nranks; ++i)
    if (w.ringRanks[i] == rank) return i;
  return 0;
}

}  // namespace collcomm::detail
