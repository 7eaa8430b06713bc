// Which jobs of GPU ranks a communicator accepts: the one place that decides it, from what every
// rank told the others at init (PeerInfo), so that every rank takes the same decision.
#pragma once

#include <vector>

#include "common/status.h"
#include "transport/transport.h"

namespace collcomm::detail {

// kOk when `rank` may join the communicator `peers` describes; else kInvalidUsage with a sentence
// naming the ranks, hosts and pids concerned. The rules:
//   - every rank is a GPU rank, or none is;
//   - GPU ranks on different hosts are welcome (NET, through pinned host memory);
//   - GPU ranks of different processes on one GPU need MPS there: without it the GPU runs one
//     process's kernels at a time, and kernels that spin on each other's steps would stall.
Status checkGpuJob(const std::vector<PeerInfo>& peers, int rank);

// Whether two ranks run on the same GPU: the same device of one process, or the same PCI bus id
// on one machine. Ranks whose bus id is unknown (-1) count as sharing when their processes differ
// and their machine is one: the safe answer, which asks for MPS.
bool sameGpu(const PeerInfo& a, const PeerInfo& b);

}  // namespace collcomm::detail
