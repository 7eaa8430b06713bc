// The CUDA executor's point-to-point kernel: one thread block runs the portable engine
// (collectives/p2p.h) over a batch of transfers with CudaPlatform, and its launcher.
//
// Launched by the CUDA executor's runP2p, one kernel per batch (a group's Send/Recv, AlltoAll,
// Gather, Scatter on one communicator), over device copies of core's point-to-point connections.
// First run on an H200 on 2026-11-27 (tests/unit/gpu/gpu_p2p_test.cc, 1 to 8 ranks).
#include <cuda_runtime.h>

#include <new>

#include "collectives/p2p.h"
#include "device/cuda/cuda_launch.h"
#include "device/cuda/cuda_platform.cuh"

namespace collcomm::detail {
namespace {

// A transfer moves one way, so its private copy is of one side's view: a send's or a receive's.
union ConnCopy {
  SendConn send;
  RecvConn recv;
  __device__ ConnCopy() {}  // neither is made until the transfer is known
};

// Grid: one block of args.nthreads threads. Returns when every transfer is done or one wait failed
// (reported in *args.status, and the peers of the batch told this rank left).
__global__ void __launch_bounds__(kCudaMaxThreads) cudaP2pKernel(const __grid_constant__ CudaP2pArgs args) {
  __shared__ uint32_t blockFailed;
  // Thread-private copies of the transfers and their connections; a connection that several
  // transfers use (the same peer, the same direction) stays one copy. Taken before the barrier
  // so that thread 0's write-back at the end cannot overtake a sibling's read.
  const int n = args.nTransfers;
  ExecTransfer ops[kCudaMaxP2pTransfers];
  ConnCopy conns[kCudaMaxP2pTransfers];  // transfer i's, where it is the first to use its connection
  auto moves = [&](const ExecTransfer& t) { return t.peer != args.self && t.bytes != 0; };
  for (int i = 0; i < n; ++i) {
    const ExecTransfer& t = args.transfers[i];
    ops[i] = t;
    if (!moves(t)) continue;  // a transfer of nothing may name a connection never made
    int first = 0;
    for (;; ++first) {
      const ExecTransfer& u = args.transfers[first];
      if (moves(u) && u.isSend == t.isSend && (t.isSend ? u.send == t.send : u.recv == t.recv)) break;
    }
    if (t.isSend) {
      if (first == i) new (&conns[i].send) SendConn(*t.send);
      ops[i].send = &conns[first].send;
    } else {
      if (first == i) new (&conns[i].recv) RecvConn(*t.recv);
      ops[i].recv = &conns[first].recv;
    }
  }
  if (threadIdx.x == 0) blockFailed = 0;
  __syncthreads();
  CudaPlatform plat(args, &blockFailed);
  P2pEngine<CudaPlatform> engine(plat, ops, static_cast<size_t>(n), kP2pCallTag);
  engine.copySelf(args.self);
  engine.run();
  // No barrier from here on: threads that failed may already have left.
  for (int i = 0; i < n; ++i) {
    const ExecTransfer& t = args.transfers[i];
    if (!moves(t) || (t.isSend ? ops[i].send != &conns[i].send : ops[i].recv != &conns[i].recv)) continue;
    if (plat.failed()) CudaPlatform::leave(t.isSend ? conns[i].send.peer : conns[i].recv.peer, args.self, kGoneFailed);
    if (threadIdx.x != 0) continue;
    if (t.isSend)
      t.send->simpleStep = conns[i].send.simpleStep;
    else
      t.recv->simpleStep = conns[i].recv.simpleStep;
  }
}

}  // namespace

void cudaP2pKernels(std::vector<const void*>* out) { out->push_back(reinterpret_cast<const void*>(&cudaP2pKernel)); }

Status cudaLaunchP2p(const CudaP2pArgs& args, struct CUstream_st* stream) {
  if (args.nTransfers < 0 || args.nTransfers > kCudaMaxP2pTransfers || !cudaWaitArgsOk(args))
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of a point-to-point batch of %d transfers with %d threads (status %p): transfers "
                    "must be 0..%d, threads a multiple of 32 in %d..%d, and a status word is required",
                    args.nTransfers, args.nthreads, static_cast<void*>(args.status), kCudaMaxP2pTransfers,
                    kCudaMinThreads, kCudaMaxThreads);
  const SelfPairs self = checkSelfPairs(args.transfers, static_cast<size_t>(args.nTransfers), args.self);
  if (self.sends != self.recvs || self.sizesDiffer)
    return CC_ERROR(Status::kInvalidUsage,
                    "point-to-point batch on rank %d: its %zu sends to self and %zu receives from self do not pair "
                    "up with equal sizes",
                    args.self, self.sends, self.recvs);
  for (int i = 0; i < args.nTransfers; ++i) {
    const ExecTransfer& t = args.transfers[i];
    if (t.peer != args.self && t.bytes != 0 && (t.isSend ? t.send == nullptr : t.recv == nullptr))
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of a point-to-point batch: transfer %d lacks its connection", i);
  }
  cudaP2pKernel<<<1, args.nthreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(args);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return CC_ERROR(Status::kCudaError, "launching the point-to-point kernel failed: %s", cudaGetErrorString(err));
  return kOk;
}

}  // namespace collcomm::detail
