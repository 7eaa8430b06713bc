// Host side of the CUDA executor: argument checks, the (collective, dtype, op, protocol) ->
// kernel dispatch over the kernel table's shards (ring kernels, and the tree AllReduce's), the
// launch, and the sentence for a failed kernel.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <utility>

#include "common/log.h"
#include "device/cuda/cuda_launch.h"
#include "device/cuda/kernel_table.h"
#include "device/dtypes.h"

namespace collcomm::detail {
namespace {

using ShardLookup = const void* (*)(int);

template <int... kShards>
constexpr std::array<ShardLookup, sizeof...(kShards)> shardLookups(std::integer_sequence<int, kShards...>) {
  return {&cudaKernelShardLookup<kShards>...};
}
constexpr auto kShardLookups = shardLookups(std::make_integer_sequence<int, kCudaKernelShards>{});

template <int... kShards>
constexpr std::array<ShardLookup, sizeof...(kShards)> treeShardLookups(std::integer_sequence<int, kShards...>) {
  return {&cudaTreeKernelShardLookup<kShards>...};
}
constexpr auto kTreeShardLookups = treeShardLookups(std::make_integer_sequence<int, kCudaKernelShards>{});

// What every launch of a block-per-channel kernel (rings, trees) asks of its arguments: a known
// collective, type, reduction and protocol, 1..kCudaMaxChannels channels, and threads and a status
// word as cudaWaitArgsOk wants them. `what` names the kernel in the sentence.
template <class Args>
Status checkChannelLaunch(const Args& in, const char* what) {
  const int kind = static_cast<int>(in.kind);
  if (kind < 0 || kind >= kCollKindCount) return CC_ERROR(Status::kInvalidArgument, "invalid collective %d", kind);
  if (dtypeSize(in.dtype) == 0)
    return CC_ERROR(Status::kInvalidArgument, "invalid data type %d", static_cast<int>(in.dtype));
  const int op = static_cast<int>(in.op.kind);
  if (collReduces(in.kind) && (op < 0 || op >= kRedOpKindCount))
    return CC_ERROR(Status::kInvalidArgument, "invalid reduction kind %d", op);
  if (in.proto != Protocol::kSimple && in.proto != Protocol::kLL)
    return CC_ERROR(Status::kInvalidArgument, "invalid protocol %d", static_cast<int>(in.proto));
  if (in.nChannels < 1 || in.nChannels > kCudaMaxChannels || !cudaWaitArgsOk(in) || in.nranks < 1)
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of %s %s with %d channels of %d threads on %d ranks (status %p): channels must be "
                    "1..%d, threads a multiple of 32 in %d..%d, and a status word is required",
                    what, collName(in.kind), in.nChannels, in.nthreads, in.nranks, static_cast<void*>(in.status),
                    kCudaMaxChannels, kCudaMinThreads, kCudaMaxThreads);
  return kOk;
}

// The device's per-thread stack, set now to what the largest of our kernels needs (and at least
// what it is). CUDA grows the stack at a launch that needs more, which like setting it may wait for
// the kernels already running: a rank's first launch could then wait for a peer's kernel that
// spins waiting for that very rank (NVSHMEM sets the stack ahead for NCCL's kernels for this
// reason). Set here, at init, it is backed before any of our kernels runs. The Direct, point-to-point
// and one-shot kernels' thread-private connections take about 7 KiB a thread: close to 2 GiB of
// local memory on a 132-SM GPU, which their first launch would take anyway. Where the device cannot hold it the
// communicator still works, with that hazard, and a warning says so.
void reserveKernelStacks(int device, size_t stackBytes) {
  size_t current = 0;
  if (cudaDeviceGetLimit(&current, cudaLimitStackSize) != cudaSuccess) current = 0;
  const size_t want = std::max(current, stackBytes);
  const cudaError_t err = cudaDeviceSetLimit(cudaLimitStackSize, want);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: nothing else failed
    CC_WARN(
        "CUDA device %d: reserving %zu bytes of stack per thread for collcomm's kernels failed (%s); a rank's first "
        "launch of a kernel with a larger stack may then wait for its peers' running kernels until the timeout",
        device, want, cudaGetErrorString(err));
    return;
  }
  CC_INFO(kSubsysInit,
          "CUDA device %d: %zu bytes of stack per thread reserved for collcomm's kernels (largest frame %zu)", device,
          want, stackBytes);
}

}  // namespace

Status cudaLaunchCollective(const CudaCollArgs& in, struct CUstream_st* stream) {
  CC_CHECK(checkChannelLaunch(in, "the ring"));
  // A fused launch: a block per member and channel, within the table; every member with a status.
  const int members = std::max(in.nMembers, 1);
  if (in.nMembers < 0 || in.nMembers > kCudaMaxMembers || members * in.nChannels > kCudaMaxChannels)
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of %s for %d ranks sharing the device with %d channels each: the ranks must be 0..%d "
                    "and ranks x channels at most %d",
                    collName(in.kind), in.nMembers, in.nChannels, kCudaMaxMembers, kCudaMaxChannels);
  for (int m = 0; m < in.nMembers; ++m)
    if (in.members[m].status == nullptr)
      return CC_ERROR(Status::kInvalidArgument, "CUDA launch of %s: member %d of the fused launch has no status word",
                      collName(in.kind), m);
  // A group's works: no more than the table holds, not in a fused launch, each within the
  // launch's channels and of a known algorithm.
  if (in.nWorks < 0 || in.nWorks > kCudaMaxGroupWorks || (in.nWorks > 0 && in.nMembers > 0))
    return CC_ERROR(Status::kInvalidArgument,
                    "CUDA launch of %s with %d works of a group (%d ranks fused): works must be 0..%d, and a fused "
                    "launch has none",
                    collName(in.kind), in.nWorks, in.nMembers, kCudaMaxGroupWorks);
  for (int i = 0; i < in.nWorks; ++i) {
    const CudaGroupWork& w = in.works[i];
    if (w.nChannels < 1 || w.nChannels > in.nChannels || w.algo != in.works[0].algo)
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of %s: work %d of the group asks for %d channels (the launch has %d) and algorithm "
                      "%d (work 0: %d)",
                      collName(in.kind), i, w.nChannels, in.nChannels, static_cast<int>(w.algo),
                      static_cast<int>(in.works[0].algo));
  }
  const int blocks = members * in.nChannels;
  for (int b = 0; b < blocks; ++b) {
    const CudaChannelArgs& ch = in.channels[b];
    if (ch.member < 0 || ch.member >= members || ch.channel < 0 || ch.channel >= in.nChannels)
      return CC_ERROR(Status::kInvalidArgument, "CUDA launch of %s: block %d names member %d channel %d",
                      collName(in.kind), b, ch.member, ch.channel);
    if (in.nranks > 1 && (ch.send == nullptr || ch.recv == nullptr || ch.ringRanks == nullptr))
      return CC_ERROR(Status::kInvalidArgument, "CUDA launch of %s: channel %d lacks its connections or ring",
                      collName(in.kind), ch.channel);
  }

  CudaCollArgs args = in;
  if (!collReduces(in.kind)) {
    const size_t elemBytes = dtypeSize(args.dtype);
    lowerToBytes(&args);
    for (int m = 0; m < args.nMembers; ++m) args.members[m].op = args.op;  // bytes are copied, not combined
    for (int i = 0; i < args.nWorks; ++i) {
      args.works[i].count *= elemBytes;
      args.works[i].op = args.op;
    }
  }
  const int index = cudaKernelIndex(args.kind, args.dtype, args.op.kind, args.proto);
  const void* kernel = kShardLookups[index % kCudaKernelShards](index);
  if (kernel == nullptr) {
    // Only collectives with a ring algorithm have kernels (kernel_shard.cu).
    return CC_ERROR(Status::kInvalidArgument, "the CUDA executor has no ring kernel for %s", collName(args.kind));
  }
  void* params[] = {&args};
  const cudaError_t err = cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(blocks)),
                                           dim3(static_cast<unsigned>(args.nthreads)), params, 0, stream);
  if (err != cudaSuccess) {
    return CC_ERROR(Status::kCudaError, "launching the CUDA %s kernel (%s, %s, %s, %d channels) failed: %s",
                    collName(args.kind), dtypeName(args.dtype), redOpKindName(args.op.kind), protocolName(args.proto),
                    args.nChannels, cudaGetErrorString(err));
  }
  return kOk;
}

Status cudaLaunchTree(const CudaTreeArgs& in, struct CUstream_st* stream) {
  CC_CHECK(checkChannelLaunch(in, "the tree"));
  if (in.kind != CollKind::kAllReduce)
    return CC_ERROR(Status::kInvalidArgument, "CUDA launch of the tree %s: the tree kernel runs AllReduce only",
                    collName(in.kind));
  for (int c = 0; c < in.nChannels && in.nranks > 1; ++c) {
    const TreeLinks& l = in.trees[c];
    if (l.toParent == nullptr && l.toChild[0] == nullptr)
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of the tree AllReduce on rank %d: channel %d has neither a parent nor a child",
                      in.rank, c);
    if ((l.toParent == nullptr) != (l.fromParent == nullptr) ||
        (l.toChild[0] == nullptr) != (l.fromChild[0] == nullptr) ||
        (l.toChild[1] == nullptr) != (l.fromChild[1] == nullptr))
      return CC_ERROR(Status::kInvalidArgument,
                      "CUDA launch of the tree AllReduce on rank %d: channel %d joins a tree peer one way only",
                      in.rank, c);
  }
  const int index = cudaTreeKernelIndex(in.dtype, in.op.kind, in.proto);
  const void* kernel = kTreeShardLookups[index % kCudaKernelShards](index);
  if (kernel == nullptr)
    return CC_ERROR(Status::kInternalError, "the CUDA executor has no tree AllReduce kernel for (%s, %s, %s)",
                    dtypeName(in.dtype), redOpKindName(in.op.kind), protocolName(in.proto));
  CudaTreeArgs args = in;
  void* params[] = {&args};
  const cudaError_t err = cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(args.nChannels)),
                                           dim3(static_cast<unsigned>(args.nthreads)), params, 0, stream);
  if (err != cudaSuccess)
    return CC_ERROR(Status::kCudaError, "launching the CUDA tree AllReduce kernel (%s, %s, %s, %d channels) failed: %s",
                    dtypeName(args.dtype), redOpKindName(args.op.kind), protocolName(args.proto), args.nChannels,
                    cudaGetErrorString(err));
  return kOk;
}

Status cudaPrepareKernels(int nthreads, int* blocksPerSm) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return CC_ERROR(Status::kCudaError, "cudaGetDevice failed: %s", cudaGetErrorString(err));
  constexpr int kMaxDevices = 64;
  if (device < 0 || device >= kMaxDevices)
    return CC_ERROR(Status::kInvalidUsage, "CUDA device %d: collcomm handles device ordinals below %d", device,
                    kMaxDevices);
  static std::mutex mu;
  static int prepared[kMaxDevices][2] = {};  // per device: {nthreads, blocks per SM}; 0 = not yet
  std::lock_guard<std::mutex> lock(mu);
  if (prepared[device][0] == nthreads) {
    *blocksPerSm = prepared[device][1];
    return kOk;
  }
  int least = 1 << 30;
  // The ring and tree tables' kernels (a block per channel: the least of their blocks per SM
  // bounds the channels) and then the one-block kernels, which are only loaded.
  std::vector<const void*> kernels;
  for (int index = 0; index < kCudaKernelCount; ++index)
    if (const void* kernel = kShardLookups[index % kCudaKernelShards](index); kernel != nullptr)
      kernels.push_back(kernel);
  for (int index = 0; index < kCudaTreeKernelCount; ++index)
    if (const void* kernel = kTreeShardLookups[index % kCudaKernelShards](index); kernel != nullptr)
      kernels.push_back(kernel);
  const size_t channelKernels = kernels.size();
  cudaP2pKernels(&kernels);
  cudaOneShotKernels(&kernels);
  cudaDirectKernels(&kernels);
  size_t stackBytes = 0;  // the largest per-thread local memory (stack frame) of any kernel
  for (size_t index = 0; index < kernels.size(); ++index) {
    const void* kernel = kernels[index];
    cudaFuncAttributes attr{};
    err = cudaFuncGetAttributes(&attr, kernel);  // loads the kernel's module now
    stackBytes = std::max(stackBytes, attr.localSizeBytes);
    int blocks = 0;
    if (err == cudaSuccess) err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, nthreads, 0);
    if (err != cudaSuccess)
      return CC_ERROR(Status::kCudaError,
                      "loading collcomm's CUDA kernels on device %d failed: %s (was the library built for this GPU's "
                      "architecture? COLLCOMM_CUDA_ARCHS)",
                      device, cudaGetErrorString(err));
    if (index < channelKernels && blocks < least) least = blocks;
  }
  reserveKernelStacks(device, stackBytes);
#ifdef CC_CUDA_QUICK_KERNELS
  CC_WARN(
      "collcomm's CUDA kernels were built with the device optimiser turned down (COLLCOMM_CUDA_QUICK_KERNELS, "
      "for builds that only check they compile): they run correctly but slowly on device %d; rebuild without "
      "it to measure or use them",
      device);
#endif
  prepared[device][0] = nthreads;
  prepared[device][1] = least;
  *blocksPerSm = least;
  return kOk;
}

Status cudaKernelResult(const CudaKernelStatus& st, const char* opName, int rank) {
  if (st.code == ccSuccess) return kOk;
  const Status code = static_cast<Status>(st.code);
  switch (static_cast<CudaFailReason>(st.reason)) {
    case CudaFailReason::kAborted:
      return CC_ERROR(code, "%s on rank %d stopped: the communicator was aborted (ccCommAbort)", opName, rank);
    case CudaFailReason::kPeerGone: {
      // As the host executor says it (host_platform.cc): who left first, and why.
      const uint32_t state = static_cast<uint32_t>(st.got);
      const int culprit = goneCulprit(state);
      const char* why = goneReasonText(goneReason(state));
      if (culprit >= 0 && culprit != st.peerRank)
        return CC_ERROR(code,
                        "%s on rank %d failed: rank %d %s, and rank %d left the operation because of it while "
                        "channel %d of this rank was waiting for %s",
                        opName, rank, culprit, why, st.peerRank, st.channel, st.what);
      return CC_ERROR(code,
                      "%s on rank %d failed: rank %d %s and left the operation while channel %d of this rank was "
                      "waiting for %s",
                      opName, rank, st.peerRank, why, st.channel, st.what);
    }
    case CudaFailReason::kPeerExited:
      return CC_ERROR(code,
                      "%s on rank %d failed: rank %d's process exited while channel %d of this rank was waiting for "
                      "%s",
                      opName, rank, st.peerRank, st.channel, st.what);
    case CudaFailReason::kTimeout:
      return CC_ERROR(code,
                      "%s on rank %d timed out on channel %d waiting for %s from rank %d; raise COLLCOMM_TIMEOUT if "
                      "the peer is just slow, or check that every rank made the same call",
                      opName, rank, st.channel, st.what, st.peerRank);
    case CudaFailReason::kStepMismatch: {
      char why[256];
      describeStepMismatch(st.got, st.expected, why, sizeof(why));
      return CC_ERROR(code, "%s on rank %d: rank %d %s", opName, rank, st.peerRank, why);
    }
    case CudaFailReason::kCallMismatch:
      return CC_ERROR(code,
                      "%s on rank %d: rank %d called another collective (count %llu where this rank has %llu, or "
                      "another kind, type, reduction or root); every rank must make the same call",
                      opName, rank, st.peerRank, static_cast<unsigned long long>(st.got),
                      static_cast<unsigned long long>(st.expected));
    case CudaFailReason::kBadStepSize:
      return CC_ERROR(code,
                      "%s on rank %d: channel %d has a connection step that holds no element or exceeds the LL "
                      "staging of %zu bytes",
                      opName, rank, st.channel, kMaxLlStepPayload);
    case CudaFailReason::kNone:
      break;
  }
  return CC_ERROR(code, "%s on rank %d failed in a CUDA kernel (reason %u)", opName, rank, st.reason);
}

}  // namespace collcomm::detail
