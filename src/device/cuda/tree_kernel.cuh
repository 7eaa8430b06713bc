// The CUDA executor's tree AllReduce kernel: one thread block per channel runs the portable
// collectives/tree_all_reduce.h over four role Primitives<T, Fn, Proto, CudaPlatform> on the
// channel's tree links, as the host executor's tree runner (host/host_run_tree.cc) does with
// HostPlatform. Instantiated by kernel_shard.cu beside the ring kernels; launched by
// cuda_launch.cu (cudaLaunchTree). First run on an H200 on 2026-11-27: 4 and 8 ranks, bit for bit
// with the host executor's trees.
//
// Synchronisation: every Primitives step ends at a block barrier (Simple: releaseRecv and
// postSend; LL: postSend's and releaseRecv's, acquireRecv's after staging), so when the algorithm
// switches roles (up0's output read by up1, down0's output sent by down1) the writes of the role
// before are ordered before the reads of the next, whichever threads made them. The four roles
// share the block's one CudaPlatform, so the LL send staging alternates over all their sends alike
// on every thread. The tree's shape (root, children) is the same for every thread of the block, so
// all threads take the same branches and meet at the same barriers.
#pragma once

#include "collectives/tree_all_reduce.h"
#include "device/cuda/cuda_args.h"
#include "device/cuda/cuda_platform.cuh"
#include "device/primitives.h"
#include "device/protocols.h"
#include "device/reduce_copy.h"

namespace collcomm::detail {

// CudaPlatform with the steps' copies out of line: one reduceCopy per (type, reduction) serves
// the tree's ten verb calls, which nvcc would otherwise each compile with the copy inlined (then
// 1.7-1.9 times as long per tree kernel, 1.7 times a ring AllReduce kernel; out of line about
// the ring AllReduce's time: docs/lab/2026-11-27.md). A call per step costs little beside the
// step's copy.
class CudaTreePlatform : public CudaPlatform {
 public:
  using CudaPlatform::CudaPlatform;

  template <class Fn, class T>
  __device__ __noinline__ void reduceCopy(const Fn& fn, size_t n, const T* src0, bool pre0, const T* src1, bool pre1,
                                          T* dst0, T* dst1, bool post) {
    reduceCopyDevice(fn, tid(), nthreads(), n, src0, pre0, src1, pre1, dst0, dst1, post);
  }
};

// Grid: nChannels blocks of nthreads threads. Returns when the channel's share is done or failed
// (see CudaPlatform); failures are reported in *args.status.
template <class T, class Fn, class Proto>
__global__ void __launch_bounds__(kCudaMaxThreads) cudaTreeKernel(const __grid_constant__ CudaTreeArgs args) {
  constexpr size_t kStaging = Proto::kNeedsStaging ? kMaxLlStepPayload : 16;
  __shared__ alignas(16) unsigned char sendStaging[2][kStaging];
  __shared__ alignas(16) unsigned char recvStaging[kStaging];
  __shared__ uint32_t blockFailed;

  const int c = static_cast<int>(blockIdx.x);
  const Fn fn(opArgOf<T>(args.op));
  if (args.nranks == 1) {
    // Alone: the result is this rank's input, pre- and post-processed (as the host executor).
    const RingWork w = channelWorkOf(args, c, 0, nullptr, 0);
    const T* src = static_cast<const T*>(w.sendbuff) + w.partOffset;
    T* dst = static_cast<T*>(w.recvbuff) + w.partOffset;
    reduceCopy(fn, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), w.partCount, src, true,
               static_cast<const T*>(nullptr), false, dst, static_cast<T*>(nullptr), true);
    return;
  }

  // Thread-private copies of the channel's tree connections (every thread advances its own step
  // counters), taken before the barrier so that thread 0's write-back at the end cannot overtake
  // a sibling's read. links points at the copies, with the shape of the channel's links.
  const TreeLinks& shared = args.trees[c];
  SendConn toParent, toChild[2];
  RecvConn fromParent, fromChild[2];
  TreeLinks links{nullptr, nullptr, {nullptr, nullptr}, {nullptr, nullptr}};
  if (shared.toParent != nullptr) links.toParent = &(toParent = *shared.toParent);
  if (shared.fromParent != nullptr) links.fromParent = &(fromParent = *shared.fromParent);
  for (int k = 0; k < 2; ++k) {
    if (shared.toChild[k] != nullptr) links.toChild[k] = &(toChild[k] = *shared.toChild[k]);
    if (shared.fromChild[k] != nullptr) links.fromChild[k] = &(fromChild[k] = *shared.fromChild[k]);
  }
  if (threadIdx.x == 0) blockFailed = 0;
  __syncthreads();
  CudaTreePlatform plat(args, &blockFailed, sendStaging[0], sendStaging[1], recvStaging);

  using Prims = Primitives<T, Fn, Proto, CudaTreePlatform>;
  SendConn* send[kTreeRoles];
  RecvConn* recv[kTreeRoles];
  for (int r = 0; r < kTreeRoles; ++r) treeRoleConns(links, r, &send[r], &recv[r]);
  const uint32_t tag = callTagOf(args);
  Prims roles[kTreeRoles] = {Prims(plat, fn, send[0], recv[0], tag), Prims(plat, fn, send[1], recv[1], tag),
                             Prims(plat, fn, send[2], recv[2], tag), Prims(plat, fn, send[3], recv[3], tag)};
  // Every tree connection carries steps of one size (core/tree_conns.h): any role that has a
  // connection says it. An LL step must fit the staging in shared memory.
  size_t stepElems = 0;
  const PeerRef* anyPeer = nullptr;
  bool stagingFits = true;
  for (int r = 0; r < kTreeRoles; ++r) {
    if (send[r] != nullptr) {
      anyPeer = &send[r]->peer;
      stagingFits &= !Proto::kNeedsStaging || Proto::stepBytes(*send[r]) <= kMaxLlStepPayload;
    }
    if (recv[r] != nullptr) {
      anyPeer = &recv[r]->peer;
      stagingFits &= !Proto::kNeedsStaging || Proto::stepBytes(*recv[r]) <= kMaxLlStepPayload;
    }
    if (stepElems == 0 && (send[r] != nullptr || recv[r] != nullptr)) stepElems = roles[r].stepElems();
  }
  if (anyPeer == nullptr || stepElems == 0 || !stagingFits) {
    plat.fail(ccInternalError, CudaFailReason::kBadStepSize, anyPeer != nullptr ? *anyPeer : PeerRef{}, "staging");
  } else {
    treeAllReduce<T>(roles, treeWorkOf(args, c, links, stepElems));
  }

  // No barrier from here on: threads that failed may already have left.
  if (plat.failed()) {
    if (links.toParent != nullptr) CudaPlatform::leave(toParent.peer, args.rank, kGoneFailed);
    if (links.fromParent != nullptr) CudaPlatform::leave(fromParent.peer, args.rank, kGoneFailed);
    for (int k = 0; k < 2; ++k) {
      if (links.toChild[k] != nullptr) CudaPlatform::leave(toChild[k].peer, args.rank, kGoneFailed);
      if (links.fromChild[k] != nullptr) CudaPlatform::leave(fromChild[k].peer, args.rank, kGoneFailed);
    }
  }
  if (threadIdx.x == 0) {
    auto keepSend = [](SendConn* to, const SendConn& mine) {
      to->simpleStep = mine.simpleStep;
      to->llStep = mine.llStep;
      to->llCursor = mine.llCursor;
    };
    auto keepRecv = [](RecvConn* to, const RecvConn& mine) {
      to->simpleStep = mine.simpleStep;
      to->llStep = mine.llStep;
      to->llCursor = mine.llCursor;
    };
    if (links.toParent != nullptr) keepSend(shared.toParent, toParent);
    if (links.fromParent != nullptr) keepRecv(shared.fromParent, fromParent);
    for (int k = 0; k < 2; ++k) {
      if (links.toChild[k] != nullptr) keepSend(shared.toChild[k], toChild[k]);
      if (links.fromChild[k] != nullptr) keepRecv(shared.fromChild[k], fromChild[k]);
    }
  }
}

}  // namespace collcomm::detail
