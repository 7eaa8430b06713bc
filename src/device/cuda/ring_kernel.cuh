// The CUDA executor's ring kernel: one thread block per channel runs a portable ring algorithm
// (collectives/) over Primitives<T, Fn, Proto, CudaPlatform>. Instantiated by kernel_shard.cu;
// launched by cuda_launch.cu.
#pragma once

#include <type_traits>

#include "collectives/coll_work.h"
#include "collectives/ring_all_gather.h"
#include "collectives/one_shot_all_reduce.h"
#include "collectives/ring_broadcast.h"
#include "collectives/ring_reduce.h"
#include "collectives/ring_reduce_scatter.h"
#include "device/cuda/cuda_args.h"
#include "device/cuda/cuda_platform.cuh"
#include "device/primitives.h"
#include "device/protocols.h"
#include "device/reduce_copy.h"

namespace collcomm::detail {


// The ring algorithm of each collective that has one, as a type (function templates cannot be
// template arguments). RingAlgoOf<K>::Type is void for collectives without a ring kernel.
struct AllReduceRing {
  template <class T, class Prims>
  __device__ static void run(Prims& prims, const RingWork& w) { allReduce<T>(prims, w); }
};
struct ReduceRing {
  template <class T, class Prims>
  __device__ static void run(Prims& prims, const RingWork& w) { ringReduce<T>(prims, w); }
};
struct ReduceScatterRing {
  template <class T, class Prims>
  __device__ static void run(Prims& prims, const RingWork& w) { ringReduceScatter<T>(prims, w); }
};
struct BroadcastRing {
  template <class T, class Prims>
  __device__ static void run(Prims& prims, const RingWork& w) { ringBroadcast<T>(prims, w); }
};
struct AllGatherRing {
  template <class T, class Prims>
  __device__ static void run(Prims& prims, const RingWork& w) { ringAllGather<T>(prims, w); }
};

template <CollKind K> struct RingAlgoOf { using Type = void; };
template <> struct RingAlgoOf<CollKind::kAllReduce> { using Type = AllReduceRing; };
template <> struct RingAlgoOf<CollKind::kReduce> { using Type = ReduceRing; };
template <> struct RingAlgoOf<CollKind::kReduceScatter> { using Type = ReduceScatterRing; };
template <> struct RingAlgoOf<CollKind::kBroadcast> { using Type = BroadcastRing; };
template <> struct RingAlgoOf<CollKind::kAllGather> { using Type = AllGatherRing; };

template <Protocol P>
using ProtoOf = std::conditional_t<P == Protocol::kLL, ProtoLL, ProtoSimple>;

// Grid: nChannels blocks of nthreads threads (a fused launch: nMembers x nChannels, cuda_args.h).
// Block c runs its channel's share of each of the launch's works in order (one, or a group's:
// cuda_args.h). Returns when they are done or one failed (see CudaPlatform); failures are reported
// in the block's rank's status.
template <class T, class Fn, class Proto, class Algo>
__global__ void __launch_bounds__(kCudaMaxThreads) cudaRingKernel(const __grid_constant__ CudaCollArgs args) {
  constexpr size_t kStaging = Proto::kNeedsStaging ? kMaxLlStepPayload : 16;
  __shared__ alignas(16) unsigned char sendStaging[2][kStaging];
  __shared__ alignas(16) unsigned char recvStaging[kStaging];
  __shared__ uint32_t blockFailed;

  const CudaChannelArgs& ch = args.channels[blockIdx.x];
  const int c = ch.channel;
  // The block's rank: the launch's own, or in a fused launch its member's buffers, reduction,
  // abort word, peers' exit words and status.
  CollWork base = args;
  CudaWaitArgs waits = args;
  if (args.nMembers > 0) {
    const CudaMemberArgs& m = args.members[ch.member];
    base.sendbuff = m.sendbuff;
    base.recvbuff = m.recvbuff;
    base.op = m.op;
    waits.abortFlag = m.abortFlag;
    waits.peerExited = m.peerExited;
    waits.status = m.status;
  }
  const int nWorks = args.nWorks > 0 ? args.nWorks : 1;
  if (base.nranks == 1) {
    // Alone: the result is this rank's input, pre- and post-processed (as the host executor).
    for (int i = 0; i < nWorks; ++i) {
      const CollWork work = groupWorkOf(args, base, i);
      if (c >= work.nChannels) continue;
      const Fn fn(opArgOf<T>(work.op));
      const RingWork w = channelWorkOf(work, c, ch.ringPos, ch.ringRanks, 0);
      const T* src = static_cast<const T*>(w.sendbuff) + w.partOffset;
      T* dst = static_cast<T*>(w.recvbuff) + w.partOffset;
      reduceCopy(fn, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), w.partCount, src, true,
                 static_cast<const T*>(nullptr), false, dst, static_cast<T*>(nullptr), true);
    }
    return;
  }

  // Thread-private copies: every thread advances its own step counters, from one work to the
  // next. Taken before the barrier so that thread 0's write-back at the end cannot overtake a
  // sibling's read.
  SendConn send = *ch.send;
  RecvConn recv = *ch.recv;
  if (threadIdx.x == 0) blockFailed = 0;
  __syncthreads();
  CudaPlatform plat(waits, &blockFailed, sendStaging[0], sendStaging[1], recvStaging);
  plat.nameChannel(c);
  bool ranOne = false;
  for (int i = 0; i < nWorks; ++i) {
    const CollWork work = groupWorkOf(args, base, i);
    if (c >= work.nChannels) continue;
    // The works share the staging buffers: every thread is past the last one's steps before the
    // next one's first. A failed thread calls no barrier (see CudaPlatform).
    if (ranOne) {
      if (plat.failed()) break;
      plat.barrier();
      if (plat.failed()) break;
    }
    ranOne = true;
    const Fn fn(opArgOf<T>(work.op));
    Primitives<T, Fn, Proto, CudaPlatform> prims(plat, fn, &send, &recv, callTagOf(work));
    if (prims.stepElems() == 0 || (Proto::kNeedsStaging && (Proto::stepBytes(send) > kMaxLlStepPayload ||
                                                            Proto::stepBytes(recv) > kMaxLlStepPayload))) {
      plat.fail(ccInternalError, CudaFailReason::kBadStepSize, send.peer, "staging");
      break;
    }
    Algo::template run<T>(prims, channelWorkOf(work, c, ch.ringPos, ch.ringRanks, prims.stepElems()));
  }
  // No barrier from here on: threads that failed may already have left.
  if (plat.failed()) {
    const int self = ch.ringRanks[ch.ringPos];
    CudaPlatform::leave(send.peer, self, kGoneFailed);
    CudaPlatform::leave(recv.peer, self, kGoneFailed);
  }
  if (threadIdx.x == 0) {
    ch.send->simpleStep = send.simpleStep;
    ch.send->llStep = send.llStep;
    ch.send->llCursor = send.llCursor;
    ch.recv->simpleStep = recv.simpleStep;
    ch.recv->llStep = recv.llStep;
    ch.recv->llCursor = recv.llCursor;
  }
}

}  // namespace collcomm::detail
