#include "device/cuda/fused_launch.h"

#include <algorithm>

#include "common/log.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_launch.h"

namespace collcomm::detail {

// One member's part of a round: read by the member that launches, on its own thread, while this
// one waits in the rendezvous.
struct FusedLaunch::Piece {
  const CudaCollArgs* args;
  cudaStream_t stream;
  cudaEvent_t ready;
  cudaEvent_t done;
  bool capturing;  // `stream` is being captured into a graph
  int rank;
};

FusedLaunch::~FusedLaunch() {
  if (ready_ == nullptr && done_ == nullptr) return;
  ScopedDevice on(device_);
  if (ready_ != nullptr) cudaEventDestroy(ready_);
  if (done_ != nullptr) cudaEventDestroy(done_);
}

Status FusedLaunch::join(const ExecSetup& s, int rank, int device) {
  rank_ = rank;
  device_ = device;
  const int most = std::max(1, s.mostRanksOnADevice);
  if (most > kCudaMaxMembers) {
    CC_WARN(
        "rank %d: %d ranks share a CUDA device, more than one launch holds (%d): COLLCOMM_GPU_FUSED_LAUNCH is "
        "ignored",
        rank, most, kCudaMaxMembers);
    return kOk;
  }
  member_ = static_cast<int>(std::find(s.deviceMates.begin(), s.deviceMates.end(), rank) - s.deviceMates.begin());
  if (member_ >= static_cast<int>(s.deviceMates.size()))
    return CC_ERROR(Status::kInternalError, "rank %d is not among the ranks on its own CUDA device", rank);
  CC_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  CC_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  CC_CHECK(joinLaunchGroup(s.commId, device, s.deviceMates, &group_));
  CC_INFO(kSubsysInit, "rank %d: fused launches with ranks sharing CUDA device %d (member %d of %zu)", rank, device,
          member_, s.deviceMates.size());
  return kOk;
}

Status FusedLaunch::launch(const CudaCollArgs& a, cudaStream_t stream, uint64_t timeoutNs) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CC_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const Piece piece{&a, stream, ready_, done_, capture != cudaStreamCaptureStatusNone, rank_};
  if (!piece.capturing) CC_CUDA_CHECK(cudaEventRecord(ready_, stream));
  const LaunchGroup::Arrival me{member_, &piece};
  CC_CHECK(group_->arrive(std::span<const LaunchGroup::Arrival>(&me, 1), fuseAndLaunch,
                          Deadline::afterSeconds(static_cast<double>(timeoutNs) * 1e-9)));
  if (piece.capturing) return cudaLaunchCollective(a, stream);
  if (member_ != 0) CC_CUDA_CHECK(cudaStreamWaitEvent(stream, done_, 0));
  return kOk;
}

void FusedLaunch::abort() {
  if (group_ != nullptr) group_->abort(rank_);
}

// The launch of one round (LaunchGroup::Launch): the members' kernels as one, with a block per
// member and channel, on the first member's stream once every member's stream has reached it.
Status FusedLaunch::fuseAndLaunch(std::span<const void* const> payloads) {
  const auto piece = [&](size_t m) -> const Piece& { return *static_cast<const Piece*>(payloads[m]); };
  const size_t n = payloads.size();
  size_t capturing = 0;
  for (size_t m = 0; m < n; ++m) capturing += piece(m).capturing ? 1 : 0;
  if (capturing == n) return kOk;  // each launches its own
  const CudaCollArgs& first = *piece(0).args;
  if (capturing != 0)
    return CC_ERROR(Status::kInvalidUsage,
                    "%s: ranks sharing CUDA device %d launch together, but only %zu of their %zu streams are being "
                    "captured into a graph: capture all of them or none",
                    collName(first.kind), piece(0).rank, capturing, n);
  for (size_t m = 0; m < n; ++m)
    if (isPerThreadStream(piece(m).stream))
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d: cudaStreamPerThread names the calling thread's stream, but ranks sharing a CUDA "
                      "device run their collectives as one kernel launched by whichever of their threads comes last "
                      "(COLLCOMM_GPU_FUSED_LAUNCH=1): pass a stream made with cudaStreamCreate",
                      collName(first.kind), piece(m).rank);
  CudaCollArgs fused = first;
  fused.nMembers = static_cast<int>(n);
  const int channels = first.nChannels;
  if (static_cast<int>(n) * channels > kCudaMaxChannels)
    return CC_ERROR(Status::kInternalError, "a fused launch of %zu ranks with %d channels each exceeds %d blocks", n,
                    channels, kCudaMaxChannels);
  for (size_t m = 0; m < n; ++m) {
    const CudaCollArgs& a = *piece(m).args;
    if (a.kind != first.kind || a.algo != first.algo || a.proto != first.proto || a.dtype != first.dtype ||
        a.count != first.count || a.root != first.root || a.nChannels != channels || a.op.kind != first.op.kind)
      return CC_ERROR(Status::kInvalidUsage,
                      "ranks %d and %d share a CUDA device and run their collectives as one kernel, but called "
                      "different ones: %s of %zu %s (root %d, %d channels) against %s of %zu %s (root %d, %d "
                      "channels)",
                      piece(0).rank, piece(m).rank, collName(first.kind), first.count, dtypeName(first.dtype),
                      first.root, channels, collName(a.kind), a.count, dtypeName(a.dtype), a.root, a.nChannels);
    fused.members[m] = CudaMemberArgs{a.sendbuff, a.recvbuff, a.op, a.abortFlag, a.peerExited, a.status};
    for (int c = 0; c < channels; ++c) {
      CudaChannelArgs& ch = fused.channels[static_cast<int>(m) * channels + c];
      ch = a.channels[c];
      ch.member = static_cast<int>(m);
      ch.channel = c;
    }
  }
  const cudaStream_t stream = piece(0).stream;
  for (size_t m = 1; m < n; ++m) CC_CUDA_CHECK(cudaStreamWaitEvent(stream, piece(m).ready, 0));
  CC_CHECK(cudaLaunchCollective(fused, stream));
  // Launched: every member's "done" is recorded before a failure to record one is said.
  cudaError_t firstError = cudaSuccess;
  for (size_t m = 1; m < n; ++m) {
    const cudaError_t err = cudaEventRecord(piece(m).done, stream);
    if (firstError == cudaSuccess) firstError = err;
  }
  if (firstError != cudaSuccess) return cudaFailed(firstError, "recording the end of a fused launch (cudaEventRecord)");
  return kOk;
}

}  // namespace collcomm::detail
