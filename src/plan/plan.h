// The plan of one operation: a plain value that says everything decided for it (algorithm,
// protocol, channels and their rings, chunking, the host's streaming flags) next to what it was
// decided for (collective, count, type, root, ranks). planFor is the one function that makes it:
// the choices come from planCollective/planGpuCollective (tuner.h), the rest is arithmetic the
// executors repeat (the step and chunk sizes of collectives/coll_work.h and primitives.h).
// formatPlanText and formatPlanJson print it from one list of its fields (plan.cc).
//
// Control tier: planFor runs for every collective (no allocation, no lock); the formatters run
// only where a plan is logged or described.
#pragma once

#include <cstddef>
#include <string>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "collectives/coll_work.h"
#include "device/dtypes.h"
#include "plan/trees.h"
#include "plan/tuner.h"

namespace collcomm::detail {

// One ring: the rank at each position (the rank at i sends to the rank at i + 1, the last to the
// first) and this rank's position on it. The array belongs to the communicator.
struct PlanRing {
  const int* ranks;
  int pos;
};

// One channel's tree: every rank's place in it (nranks entries, plan/trees.h). The array belongs
// to the communicator.
struct PlanTree {
  const TreeNode* nodes;
  int root;
};

// What a communicator brings to every plan, fixed once it is connected (core/op_plan.h makes it).
struct PlanShape {
  int rank = 0;
  int nranks = 1;
  bool gpu = false;
  // Channels connected (each a ring); a GPU communicator's plans use at most maxGpuChannels.
  int nChannels = 0;
  const PlanRing* rings = nullptr;  // nChannels of them
  const PlanTree* trees = nullptr;  // nChannels of them (host communicators)
  int maxGpuChannels = 0;
  // GPU: some device runs more than one of the communicator's ranks (ccComm::mostRanksOnADevice).
  bool gpuSharedDevice = false;
  // GPU, one rank a device: the rings as the topology describes them, for the cost model; null
  // where the topology did not say (ccComm::gpuModel).
  const RingGraph* gpuModel = nullptr;
  DirectReach reach = DirectReach::kNone;
  bool overNet = false;
  // Hosts the communicator's ranks are on (PeerInfo::hostHash): the same on every rank, unlike
  // overNet (a rank inside a host's chain may have no NET connection of its own).
  int nHosts = 1;
  // Payload of one ring step, per protocol: what every rank's ring connections agreed on at init
  // (the smaller of a channel's two connections, as Primitives take it).
  size_t simpleStepBytes = 0;
  size_t llStepBytes = 0;
};

// The operation asked for. count as the API takes it (AllGather, ReduceScatter: per rank); root
// for Broadcast and Reduce (the plan says -1 for the others).
struct PlanOp {
  CollKind kind;
  size_t count;
  ccDataType_t dtype;
  int root;
};

// CollPlan's choices (proto, algo, nChannels, the host's streaming flags), and the rest.
struct Plan : CollPlan {
  CollKind kind;
  size_t count;
  size_t bytes;  // as the tuner counts them: AllGather and ReduceScatter count every rank's part
  ccDataType_t dtype;
  int root;  // -1 where the collective has none
  int rank;
  int nranks;
  bool gpu;
  // Whether the algorithm runs on the channels' rings (Ring; OneShot on two ranks). Direct reads
  // the peers' buffers and OneShot on more ranks uses per-peer connections: no rings, no steps.
  bool onRings;
  // Whether it runs on the channels' trees (Tree). Steps and chunks are then the rings' (the tree
  // connections agree on a step no larger, core/tree_conns.h).
  bool onTrees;
  // On rings or trees: payload of one step (bytes, elements), and the pipeline chunk each rank handles per
  // round: kChunkSteps steps (collectives/coll_work.h). 0 when not on rings.
  size_t stepBytes;
  size_t stepElems;
  size_t chunkSteps;
  size_t chunkElems;
  size_t chunkBytes;
  // The rings of the channels used (nChannels of them), when on rings; else null.
  const PlanRing* rings;
  // The trees of the channels used, when on trees; else null.
  const PlanTree* trees;
};

// The plan for `op` on a communicator of `shape` (GPU: planGpuCollective, host: planCollective).
// The operation's arguments must have been checked (a known dtype; root in range). Inline: it runs
// for every collective, and what it adds to the tuner's choice is a few stores.
inline Plan planFor(const TunerConfig& cfg, const PlanOp& op, const PlanShape& shape) {
  const bool perRank = op.kind == CollKind::kAllGather || op.kind == CollKind::kReduceScatter;
  const size_t elem = dtypeSize(op.dtype);
  const size_t bytes = op.count * elem * (perRank ? static_cast<size_t>(shape.nranks) : 1);
  Plan p{};
  static_cast<CollPlan&>(p) =
      shape.gpu ? planGpuCollective(cfg, op.kind, bytes, shape.nranks, shape.maxGpuChannels, shape.gpuSharedDevice,
                                    shape.gpuModel, shape.reach)
                : planCollective(cfg, op.kind, bytes, shape.nranks, shape.nChannels, shape.reach, shape.overNet,
                                 shape.nHosts, shape.simpleStepBytes, shape.llStepBytes);
  p.kind = op.kind;
  p.count = op.count;
  p.bytes = bytes;
  p.dtype = op.dtype;
  p.root = op.kind == CollKind::kBroadcast || op.kind == CollKind::kReduce ? op.root : -1;
  p.rank = shape.rank;
  p.nranks = shape.nranks;
  p.gpu = shape.gpu;
  p.onTrees = shape.nranks > 1 && p.algo == Algorithm::kTree;
  p.onRings = shape.nranks > 1 && !talksToEveryPeer(p.algo, shape.nranks) && !p.onTrees;
  if (p.onRings || p.onTrees) {
    // Primitives: a step carries the protocol's payload, in whole elements; a chunk is kChunkSteps
    // steps (collectives/coll_work.h).
    // (Element sizes are powers of two: a shift, not a division, on every operation.)
    p.stepElems = (p.proto == Protocol::kLL ? shape.llStepBytes : shape.simpleStepBytes) >> __builtin_ctzll(elem);
    p.stepBytes = p.stepElems * elem;
    p.chunkSteps = kChunkSteps;
    p.chunkElems = p.stepElems * kChunkSteps;
    p.chunkBytes = p.chunkElems * elem;
    if (p.onRings) p.rings = shape.rings;
    if (p.onTrees) p.trees = shape.trees;
  }
  return p;
}

// "AllReduce rank 0: bytes 1048576, count 262144, dtype float, ..., rings [0 1 2 3]": one line,
// no newline ("rank 0 (GPU)" for GPU communicators). Consecutive equal rings print once with a
// count ("2x[0 1 2 3]"); trees print each rank's parent the same way ("trees [-1 0 0 2]").
std::string formatPlanText(const Plan& plan);
// The same fields as one JSON object, no newline; names and meanings in docs/env.md ("PLAN").
std::string formatPlanJson(const Plan& plan);

}  // namespace collcomm::detail
