// The CUDA executor's entry points: launch one ring collective on a stream, and turn what the
// kernel reported into a Status. Plain C++ (g++ can include it); defined in cuda_launch.cu.
//
// Called by the CUDA executor (cuda_executor.cc), which implements device/executor.h.
#pragma once

#include <vector>

#include "common/status.h"
#include "device/cuda/cuda_args.h"

namespace collcomm::detail {

// Queues the ring kernel for (args.kind, args.dtype, args.op.kind, args.proto) on `stream` (a
// cudaStream_t) with args.nChannels blocks of args.nthreads threads (a fused launch of several
// ranks: args.nMembers x args.nChannels, cuda_args.h), and returns without waiting.
// Broadcast/AllGather run byte-wise: the launcher rescales count to bytes itself.
// The caller zeroes *args.status first and, once the stream has passed the kernel, reads it
// (cudaKernelResult). Every pointer in args must stay valid until then.
// Errors (nothing queued): kInvalidArgument for args outside the contract of cuda_args.h,
// kCudaError when the launch itself fails. Control tier; thread-safe.
Status cudaLaunchCollective(const CudaCollArgs& args, struct CUstream_st* stream);

// Queues the tree AllReduce kernel for (args.dtype, args.op.kind, args.proto) (tree_kernel.cuh: a
// block per channel runs collectives/tree_all_reduce.h over args.trees) on `stream` with
// args.nChannels blocks of args.nthreads threads, and returns without waiting; status and
// pointers as cudaLaunchCollective. Errors (nothing queued): kInvalidArgument outside
// CudaTreeArgs' contract, kCudaError when the launch fails. The CUDA executor's runTree calls it.
// Control tier; thread-safe.
Status cudaLaunchTree(const CudaTreeArgs& args, struct CUstream_st* stream);

// Queues the point-to-point kernel (p2p_kernel.cu: one block runs collectives/p2p.h over the
// batch) on `stream` and returns without waiting; status and pointers as cudaLaunchCollective.
// Errors (nothing queued): kInvalidArgument outside CudaP2pArgs' contract, kInvalidUsage when the
// sends to self do not pair with the receives from self, kCudaError when the launch fails. The CUDA
// executor's runP2p calls it. Control tier; thread-safe.
Status cudaLaunchP2p(const CudaP2pArgs& args, struct CUstream_st* stream);

// Queues the one-shot AllReduce kernel for (args.dtype, args.op.kind) (one_shot_kernel.cu: one block
// runs collectives/one_shot_all_reduce.h over the per-peer connections) on `stream` and returns
// without waiting; status and pointers as cudaLaunchCollective. Errors (nothing queued):
// kInvalidArgument outside CudaOneShotArgs' contract, kCudaError when the launch fails. The CUDA
// executor's runOneShot calls it. Control tier; thread-safe.
Status cudaLaunchOneShot(const CudaOneShotArgs& args, struct CUstream_st* stream);

// Queues the Direct kernel (direct_kernel.cu: one block runs collectives/direct.h) for args.kind on
// `stream` and returns without waiting; status and pointers as cudaLaunchCollective. Ranks whose
// calls differ fail the kernel with kCallMismatch (got: the peer's count, expected: this rank's), or
// kStepMismatch where their exchanges' steps already tell (call_tag.h).
// Errors (nothing queued): kInvalidArgument outside CudaDirectArgs' contract, kCudaError when the
// launch fails. The CUDA executor's runDirect calls it. Control tier; thread-safe.
Status cudaLaunchDirect(const CudaDirectArgs& args, struct CUstream_st* stream);

// Append the host handles of every kernel the point-to-point, one-shot and Direct launchers may
// launch, for cudaPrepareKernels to load ahead. Setup tier.
void cudaP2pKernels(std::vector<const void*>* out);
void cudaOneShotKernels(std::vector<const void*>* out);
void cudaDirectKernels(std::vector<const void*>* out);

// The sentence and Status for what a finished kernel left in `status` (kOk when nothing failed).
// opName and rank name the operation in the sentence. Control tier.
Status cudaKernelResult(const CudaKernelStatus& status, const char* opName, int rank);

// Loads every kernel of the tables (ring and tree) and of the other launchers on the current device,
// and sets the device's stack to the largest kernel's (so that no launch waits for lazy module
// loading or a stack growth, which synchronise the context, while a peer's kernel spins), and
// returns how many blocks of `nthreads` threads of the most demanding kernel one SM holds at once.
// Once per device per process; thread-safe. Setup tier.
Status cudaPrepareKernels(int nthreads, int* blocksPerSm);

}  // namespace collcomm::detail
