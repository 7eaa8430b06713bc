// Rings from the topology, as the cost model sees them: which GPUs, how many channels, and the
// bandwidth of one channel over the ring's bottleneck link (NCCL's graph search reduced to what a
// single node needs: src/graph/search.cc picks a per-channel speed from a table, as many channels
// as the GPU's links carry at that speed, then doubles the channels at half the speed when fast
// links allow). Across N identical nodes (clusterRings): each channel's ring runs through every
// node's GPUs, entering and leaving each node through one NIC near its GPUs, the same NIC index on
// every node (rail-aware, as NCCL's rings are), so a ring crosses the network N times per channel;
// the channel's speed is NCCL's inter-node speed table cut to the NIC's share.
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
// The same over the GPUs `gpus` (indices of nodes(kGpu), at least 2); order then holds those indices.
Status ringsOverGpus(const TopoSystem& sys, const std::vector<int>& gpus, SingleNodeRings* out);
// The same over the GPUs at these PCI bus ids (a GPU communicator's devices, one a rank): a bus id
// the topology lacks, or one given twice, is kInvalidArgument with a sentence.
Status ringsOverBusIds(const TopoSystem& sys, const std::vector<int64_t>& busIds, SingleNodeRings* out);

// One channel's way through a node on several nodes: in from the network at the first GPU of
// `gpus`, through the others, out at the last, both through NET `net` (an index of nodes(kNet)).
// Every node runs the same segment; node k's ranks are k x gpus + the GPU index.
struct RailSegment {
  int net = -1;
  std::vector<int> gpus;  // GPU indices, entry first, exit last
};

struct ClusterRings {
  SingleNodeRings node;  // the rings inside one node (graph.nNodes == 1)
  RingGraph graph;       // the whole job's channels, what the model is given
  int nNodes = 1;
  // Several nodes only: the NIC bandwidth (GB/s, one direction, the slowest NET used), the
  // narrowest GPU-to-NIC path of a segment's ends, the narrowest GPU-to-GPU hop of a segment, and
  // one segment per channel (channel c on segments[c]).
  float nicBw = 0;
  float gpuNicBw = 0;
  float segmentBw = 0;
  std::vector<RailSegment> segments;
};

// The rings of a job of nNodes identical nodes, nGpus GPUs each, as `sys` describes one node. One
// node: singleNodeRings. Several: one segment per NET nearest the GPUs (the best GPU-to-NET path
// type any NET has; the entry GPU the nearest to it, the exit the next nearest), channels cycling
// over them; the speed per channel is the fastest of NCCL's inter-node speed table (per GPU
// generation) that gives the most bandwidth in all, where a NET carries floor(its share / speed)
// channels and a node's GPUs carry channels x speed within their narrowest segment hop. Errors as
// singleNodeRings (but one GPU a node is allowed on several nodes), and kInvalidArgument with a
// sentence when nNodes > 1 and the node has no NET.
// Memory and time do not grow with nNodes.
Status clusterRings(const TopoSystem& sys, int nGpus, int nNodes, ClusterRings* out);

}  // namespace collcomm::detail
