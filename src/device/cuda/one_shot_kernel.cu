// The CUDA executor's one-shot AllReduce on more than two ranks: one thread block runs the portable
// algorithm (collectives/one_shot_all_reduce.h, oneShotAllReduceAny: gather every input with the
// point-to-point engine, reduce in rank order) with CudaPlatform, for every data type and
// reduction, and its launcher.
//
// Launched by the CUDA executor (runOneShot) when the plan says OneShot on more than two ranks,
// which the GPU planner does only when forced (COLLCOMM_ALGO=OneShot). First run on an H200 on
// 2026-11-27: 4 ranks, every type and reduction, bit for bit with the host executor.
#include <cuda_runtime.h>

#include "collectives/one_shot_all_reduce.h"
#include "device/cuda/cuda_launch.h"
#include "device/cuda/cuda_platform.cuh"
#include "device/cuda/kernel_pairs.h"
#include "device/cuda/peer_conn_copies.cuh"
#include "device/dtypes.h"

namespace collcomm::detail {
namespace {

// Grid: one block of args.nthreads threads. Returns when the result is written or one wait failed
// (reported in *args.status, and every peer told this rank left).
template <class T, class Fn>
__global__ void __launch_bounds__(kCudaMaxThreads) cudaOneShotKernel(const __grid_constant__ CudaOneShotArgs args) {
  __shared__ uint32_t blockFailed;
  PeerConnCopies conns;
  ExecTransfer transfers[2 * (kCudaMaxOneShotRanks - 1)];
  conns.take(args);
  if (threadIdx.x == 0) blockFailed = 0;
  __syncthreads();
  CudaPlatform plat(args, &blockFailed);
  const Fn fn(opArgOf<T>(args.op));
  const OneShotWork w{args.sendbuff, args.recvbuff, args.count, args.rank,     args.nranks,
                      conns.peers,   args.gather,   transfers,  args.ownPreOp, callTagOf(args)};
  conns.finish(args, oneShotAllReduceAny<T>(plat, fn, w));
}

template <class T, class Fn>
struct OneShotKernel {
  static const void* get() { return reinterpret_cast<const void*>(&cudaOneShotKernel<T, Fn>); }
};

}  // namespace

void cudaOneShotKernels(std::vector<const void*>* out) { appendKernels<OneShotKernel, ReachableTypeOp>(out); }

Status cudaLaunchOneShot(const CudaOneShotArgs& args, struct CUstream_st* stream) {
  const void* kernel = kernelForTypeOp<OneShotKernel, ReachableTypeOp>(args.dtype, args.op.kind);
  if (kernel == nullptr || args.nranks < 2 || args.nranks > kCudaMaxOneShotRanks || args.rank < 0 ||
      args.rank >= args.nranks || !cudaWaitArgsOk(args) || (args.count != 0 && args.gather == nullptr))
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of the one-shot AllReduce (type %d, reduction %d) on rank %d of %d with %d threads "
                    "(status %p, gather %p): the type and reduction must be known, ranks 2..%d, threads a multiple of "
                    "32 in %d..%d, and a status word and a gather buffer are required",
                    static_cast<int>(args.dtype), static_cast<int>(args.op.kind), args.rank, args.nranks, args.nthreads,
                    static_cast<void*>(args.status), args.gather, kCudaMaxOneShotRanks, kCudaMinThreads,
                    kCudaMaxThreads);
  for (int p = 0; p < args.nranks; ++p)
    if (p != args.rank && (args.peers[p].send == nullptr || args.peers[p].recv == nullptr))
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of the one-shot AllReduce on rank %d: the connections to rank %d are missing",
                      args.rank, p);
  CudaOneShotArgs copy = args;
  void* params[] = {&copy};
  const cudaError_t err = cudaLaunchKernel(kernel, dim3(1), dim3(static_cast<unsigned>(args.nthreads)), params, 0,
                                           reinterpret_cast<cudaStream_t>(stream));
  if (err != cudaSuccess)
    return CC_ERROR(Status::kCudaError, "launching the one-shot AllReduce kernel (%s, %s) failed: %s",
                    dtypeName(args.dtype), redOpKindName(args.op.kind), cudaGetErrorString(err));
  return kOk;
}

}  // namespace collcomm::detail
