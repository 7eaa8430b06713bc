// The CUDA executor's Direct kernel: one thread block runs the portable single-copy AllGather,
// Broadcast, ReduceScatter and AllReduce (collectives/direct.h) with CudaPlatform, whose
// peer-memory hooks load and store a peer's buffers through its pointers (ranks of one process);
// for every data type and reachable reduction (ReachableTypeOp), and its launcher.
//
// Launched by the CUDA executor (runDirect) when the plan says Direct, which the GPU planner does
// only when forced (COLLCOMM_ALGO=Direct) and where every rank is on one device, so that a peer's
// buffer is read through its own pointer. Ranks on several GPUs would need their peer access
// checked, and ranks in other processes CUDA IPC mappings of their buffers
// (CudaPlatform::peerPointer): neither is done. Written 2026-11-28; it has never run on a GPU.
#include <cuda_runtime.h>

#include "collectives/direct.h"
#include "device/cuda/cuda_launch.h"
#include "device/cuda/cuda_platform.cuh"
#include "device/cuda/kernel_pairs.h"
#include "device/cuda/peer_conn_copies.cuh"
#include "device/dtypes.h"

namespace collcomm::detail {
namespace {

// Grid: one block of args.nthreads threads. Returns when the collective is done or failed
// (reported in *args.status, and every peer told this rank left).
template <class T, class Fn>
__global__ void __launch_bounds__(kCudaMaxThreads) cudaDirectKernel(const __grid_constant__ CudaDirectArgs args) {
  __shared__ uint32_t blockFailed;
  __shared__ DirectDesc descs[kCudaMaxDirectRanks];
  __shared__ uint64_t tokens[kCudaMaxDirectRanks];
  PeerConnCopies conns;
  ExecTransfer transfers[2 * (kCudaMaxDirectRanks - 1)];
  const int self = args.rank;
  conns.take(args);
  if (threadIdx.x == 0) blockFailed = 0;
  __syncthreads();
  CudaPlatform plat(args, &blockFailed);
  const uint64_t opArg = opArgOf<T>(args.op);
  const Fn fn(opArg);
  const DirectWork w =
      directWorkOf(args, args.builtinOp, opArg, self, conns.peers, descs, tokens, transfers, args.chunk);
  const DirectResult r = directCollective<T>(plat, fn, w);
  if (r.mismatch >= 0)
    plat.fail(ccInvalidUsage, CudaFailReason::kCallMismatch, conns.recvs[r.mismatch].peer, "the same call",
              descs[r.mismatch].count, descs[self].count);
  conns.finish(args, r.done);
}

template <class T, class Fn>
struct DirectKernel {
  static const void* get() { return reinterpret_cast<const void*>(&cudaDirectKernel<T, Fn>); }
};

}  // namespace

void cudaDirectKernels(std::vector<const void*>* out) { appendKernels<DirectKernel, ReachableTypeOp>(out); }

Status cudaLaunchDirect(const CudaDirectArgs& args, struct CUstream_st* stream) {
  const bool reduces = args.kind == CollKind::kAllReduce || args.kind == CollKind::kReduceScatter;
  // AllGather and Broadcast move bytes: the (uint8, sum) kernel serves every type.
  const void* kernel = reduces ? kernelForTypeOp<DirectKernel, ReachableTypeOp>(args.dtype, args.op.kind)
                               : kernelForTypeOp<DirectKernel, ReachableTypeOp>(ccUint8, RedOpKind::kSum);
  if (!directRuns(args.kind) || kernel == nullptr || dtypeSize(args.dtype) == 0 || args.nranks < 1 ||
      args.nranks > kCudaMaxDirectRanks || args.rank < 0 || args.rank >= args.nranks || !cudaWaitArgsOk(args) ||
      (reduces && args.chunk == nullptr))
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of Direct %s (type %d, reduction %d) on rank %d of %d with %d threads (status %p, "
                    "chunk %p): a collective Direct runs, a known type and reduction, ranks 1..%d, threads a "
                    "multiple of 32 in %d..%d, a status word and, to reduce, a chunk are required",
                    collName(args.kind), static_cast<int>(args.dtype), static_cast<int>(args.op.kind), args.rank,
                    args.nranks, args.nthreads, static_cast<void*>(args.status), args.chunk, kCudaMaxDirectRanks,
                    kCudaMinThreads, kCudaMaxThreads);
  for (int p = 0; p < args.nranks; ++p)
    if (p != args.rank && (args.peers[p].send == nullptr || args.peers[p].recv == nullptr))
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of Direct %s on rank %d: the connections to rank %d are missing",
                      collName(args.kind), args.rank, p);
  CudaDirectArgs copy = args;
  void* params[] = {&copy};
  const cudaError_t err = cudaLaunchKernel(kernel, dim3(1), dim3(static_cast<unsigned>(args.nthreads)), params, 0,
                                           reinterpret_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    return CC_ERROR(Status::kCudaError, "launching the Direct %s kernel (%s) failed: %s", collName(args.kind),
                    dtypeName(args.dtype), cudaGetErrorString(err));
  return kOk;
}

}  // namespace collcomm::detail
