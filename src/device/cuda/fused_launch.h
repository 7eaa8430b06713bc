// The fused launch (COLLCOMM_GPU_FUSED_LAUNCH=1; docs/gpu.md, "Ranks sharing a GPU"): the ring
// collectives of a communicator's ranks that share a device in this process run as one kernel,
// with a block per rank and channel, launched by the last of them to arrive (device/launch_group.h)
// on the first one's stream once every rank's stream got there; each rank's stream then waits for
// the kernel. The CUDA executor holds one per rank; GPU code stays in cuda_launch.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>

#include "common/status.h"
#include "device/cuda/cuda_args.h"
#include "device/executor.h"
#include "device/launch_group.h"

namespace collcomm::detail {

class FusedLaunch {
 public:
  FusedLaunch() = default;
  FusedLaunch(const FusedLaunch&) = delete;
  FusedLaunch& operator=(const FusedLaunch&) = delete;
  ~FusedLaunch();

  // Joins the launch group of s's ranks on `device` (rank `rank` among s.deviceMates); the caller
  // then caps its channels at a member's share of a launch's blocks (kCudaMaxChannels over the most
  // ranks on any device). With more ranks on a device than one launch holds it warns and stays out
  // (joined() is false).
  Status join(const ExecSetup& s, int rank, int device);
  bool joined() const { return group_ != nullptr; }

  // This rank's ring collective `a` on `stream`, fused with the other members' of the same round.
  // Under graph capture each member launches its own kernel (a captured stream cannot wait on
  // another's). Members whose calls differ all fail, with a sentence naming two of them.
  Status launch(const CudaCollArgs& a, cudaStream_t stream, uint64_t timeoutNs);

  // Stops the group: members waiting in a round, and every later round, fail (ccCommAbort).
  void abort();

 private:
  struct Piece;
  static Status fuseAndLaunch(std::span<const void* const> payloads);

  std::shared_ptr<LaunchGroup> group_;
  int member_ = 0;
  int rank_ = 0;
  int device_ = 0;
  cudaEvent_t ready_ = nullptr;  // recorded on this rank's stream before it arrives
  cudaEvent_t done_ = nullptr;   // recorded by the launch after the kernel (members but the first)
};

}  // namespace collcomm::detail
