// The cost model: the predicted time of a collective per algorithm x protocol x channel count, and
// the choice that minimises it. NCCL's structure (src/graph/tuning.cc): time = latency + bytes /
// bandwidth, with the latency a base per algorithm and protocol plus a hardware latency per ring
// hop, and the bandwidth the channels' bus bandwidth scaled by the protocol's efficiency; plus one
// term NCCL's model lacks, the ring pipeline's fill (cost_model.cc says why). Every constant is in
// one table, kCostConstants (cost_model.cc), each with its source.
//
// What the model is given is a RingGraph: ranks, identical nodes, the link class of the hops inside
// a node, the GPU generation, channels and the bandwidth of one channel over its bottleneck (a
// node's links, or on several nodes also its NIC's share). plan/ring_channels.h makes one from a
// topology. Two algorithms: Ring (every collective) and NCCL's Tree (AllReduce: a chain inside each
// node, a double binary tree across nodes), on the same channels. Host communicators are not
// modelled yet (docs/planning.md).
//
// Setup/control tier: plain arithmetic, no allocation.
#pragma once

#include <cstddef>

#include "collectives/coll_list.h"

namespace collcomm::detail {

// The protocols the model knows, NCCL's three. collcomm's executors run LL and Simple; LL128 is
// modelled so predictions compare with NCCL's measurements, and a planner for collcomm's own GPU
// executor passes allowLl128 = false.
enum class ModelProto : int { kLL = 0, kLL128 = 1, kSimple = 2 };
inline constexpr int kModelProtoCount = 3;
const char* modelProtoName(ModelProto p);

// Which hardware latency a ring hop pays (NCCL's NVLINK / PCI / NET rows).
enum class HopClass : int { kNvlink = 0, kPci = 1, kNet = 2 };
inline constexpr int kHopClassCount = 3;
const char* hopClassName(HopClass h);

// GPU generations the constants are tabled for (NCCL's compute-capability index).
enum class GpuGen : int { kVolta = 0, kAmpere = 1, kHopper = 2, kBlackwell = 3 };
inline constexpr int kGpuGenCount = 4;
// sm is the compute capability x10 (80 = 8.0); unknown (0) or older counts as Volta.
GpuGen gpuGenFromSm(int sm);

// The channels a plan runs on, as the model sees them. Trees use the rings' channels (NCCL searches
// a tree graph of its own; on the NVSwitch nodes modelled here it finds the rings' channel count
// and speed).
struct RingGraph {
  int nRanks = 1;
  int nNodes = 1;  // identical nodes of nRanks / nNodes ranks each, joined by one network
  HopClass intraHop = HopClass::kPci;
  GpuGen gen = GpuGen::kVolta;
  int maxChannels = 1;     // rings the graph holds
  float bwPerChannel = 0;  // GB/s, one direction, what one ring may use on its bottleneck link
  // Several nodes only: the LL bandwidth cap and the network post overhead depend on the CPU
  // vendor (NCCL's tables), and a NIC's own latency (the XML's net `latency`) adds to every
  // network hop.
  bool amdCpu = false;
  float netLatencyUs = 0;
};

// The time of one operation on `channels` channels with `proto`, and its parts. Times in us,
// bandwidths in GB/s (1e9 B/s).
struct CostBreakdown {
  bool applies = true;   // false: the algorithm does not run this collective (Tree: AllReduce only)
  double latencyUs = 0;  // base + per-hop hardware latency
  double fillUs = 0;     // pipeline fill: the first slice crossing every hop
  double wireUs = 0;     // bytes / algorithm bandwidth
  double timeUs = 0;     // the sum
  double busBw = 0;      // the model's bus bandwidth for this protocol and channel count
};

// The predicted cost of `kind` moving `bytes` (as nccl-tests count them: AllGather and
// ReduceScatter the whole gathered buffer) on `channels` of the graph's rings (1..maxChannels).
// On several nodes the ring crosses the network once per node and channel (2(nodes-1) of its
// 2(n-1) AllReduce steps pay the network's latency, as NCCL counts them).
CostBreakdown ringCost(const RingGraph& g, CollKind kind, size_t bytes, ModelProto proto, int channels);

// NCCL's Tree AllReduce on `channels` of the graph's channels: reduce up and broadcast down a chain
// inside each node and a binary tree across nodes, its latency growing with log2 of the node
// count; other collectives do not apply (applies = false, timeUs infinite).
CostBreakdown treeCost(const RingGraph& g, CollKind kind, size_t bytes, ModelProto proto, int channels);

// Whether the model has `algo` for `kind` (Ring: every collective; Tree: AllReduce).
bool modelHasAlgo(Algorithm algo, CollKind kind);

// ringCost or treeCost as `algo` says (kRing or kTree); collcomm's OneShot AllReduce on two ranks
// priced as a two-rank Broadcast (one hop carrying the whole input). Anything else (Direct,
// OneShot on more ranks) does not apply: applies = false, an infinite time.
CostBreakdown modelCost(const RingGraph& g, Algorithm algo, CollKind kind, size_t bytes, ModelProto proto,
                        int channels);

// What the caller pins; -1 leaves it to the model.
struct ModelChoiceLimits {
  int algo = -1;      // an Algorithm value: kRing or kTree
  int proto = -1;     // a ModelProto value
  int channels = -1;  // 1..maxChannels
  bool allowLl128 = true;
};

struct ModelChoice {
  Algorithm algo = Algorithm::kRing;
  ModelProto proto = ModelProto::kSimple;
  int channels = 1;
  CostBreakdown cost;
};

// The argmin over algorithms (Ring, Tree where it applies), protocols and channel counts (fewest
// channels among equal times: channels the bandwidth cap makes useless cost SMs; Ring before Tree).
// Needs g.nRanks >= 2 and g.maxChannels >= 1. A forced algorithm that does not apply to `kind`
// gives cost.applies = false and an infinite time.
ModelChoice chooseByModel(const RingGraph& g, CollKind kind, size_t bytes, const ModelChoiceLimits& limits = {});

// nccl-tests' bus bandwidth factor for `kind` on n ranks: busbw = algbw x factor.
double busBwFactor(CollKind kind, int nRanks);

}  // namespace collcomm::detail
