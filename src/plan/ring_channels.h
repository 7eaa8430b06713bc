// Rings from the topology, as the cost model sees them: which GPUs, how many channels, and the
// bandwidth of one channel over the ring's bottleneck link (NCCL's graph search reduced to what a
// single node needs: src/graph/search.cc picks a per-channel speed from a table, as many channels
// as the GPU's links carry at that speed, then doubles the channels at half the speed when fast
// links allow). Single node only for now; multi-node rings (one crossing per node and channel,
// spread over NICs) come with the network model.
//
// Setup tier.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "plan/cost_model.h"
#include "topo/system.h"

namespace collcomm::detail {

struct SingleNodeRings {
  RingGraph graph;
  std::vector<int> order;  // GPU indices (nodes(kGpu)) in ring order
  float ringBw = 0;        // GB/s: the ring's bottleneck path, one direction
  PathType worstPath = PathType::kLoc;
};

// The rings over the first nGpus GPUs of `sys` (paths computed): the order whose narrowest hop
// (path between ring neighbours) is widest, then whose worst hop is the best path type (up to 8
// GPUs every order is tried; beyond, index order); hop class NVLink when every hop is NVLink
// (direct, through NVSwitch or one GPU), else PCIe. nGpus < 2 or more than the system has, a system
// without GPUs, or GPUs that cannot form a ring are kInvalidArgument with a sentence.
Status singleNodeRings(const TopoSystem& sys, int nGpus, SingleNodeRings* out);

}  // namespace collcomm::detail
