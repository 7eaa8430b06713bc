// Rings from the topology graph (ring_channels.h). The speed tables and the channel rules are
// NCCL's (src/graph/search.cc: speedArrayIntra / sm90SpeedArrayIntra / sm100SpeedArrayIntra, the
// Inter tables, ncclTopoDupChannels, MAXCHANNELS / 2 rings).
#include "plan/ring_channels.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

namespace collcomm::detail {

namespace {

constexpr float kSpeedsPreHopper[] = {40.0f, 30.0f, 20.0f, 18.0f, 15.0f, 12.0f, 10.0f,
                                      9.0f,  7.0f,  6.0f,  5.0f,  4.0f,  3.0f};
constexpr float kSpeedsHopper[] = {60.0f, 50.0f, 40.0f, 30.0f, 24.0f, 20.0f, 15.0f, 12.0f, 11.0f, 6.0f, 3.0f};
constexpr float kSpeedsBlackwell[] = {90.0f, 80.0f, 70.0f, 60.0f, 50.0f, 45.0f,
                                      40.0f, 30.0f, 24.0f, 20.0f, 19.0f, 18.0f};
constexpr int kMaxRings = 32;  // NCCL: MAXCHANNELS (64) / 2
// Per-channel speeds across nodes (NCCL speedArrayInter / sm90SpeedArrayInter / sm100SpeedArrayInter).
constexpr float kInterSpeedsPreHopper[] = {48.0f, 30.0f, 28.0f, 24.0f, 20.0f, 18.0f, 15.0f, 12.0f, 10.0f, 9.0f,
                                           7.0f,  6.0f,  5.0f,  4.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
constexpr float kInterSpeedsHopper[] = {48.0f, 45.0f, 42.0f, 40.0f, 30.0f, 24.0f, 22.0f, 20.0f, 17.5f,
                                        15.0f, 12.0f, 6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
constexpr float kInterSpeedsBlackwell[] = {96.0f, 86.0f, 80.0f, 48.0f, 45.1f, 42.0f, 40.0f, 30.0f, 24.0f, 22.0f,
                                           20.0f, 17.5f, 15.0f, 12.0f, 6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};

struct Speeds {
  const float* v;
  int n;
};

Speeds interSpeedsFor(GpuGen gen) {
  if (gen == GpuGen::kBlackwell) return {kInterSpeedsBlackwell, static_cast<int>(std::size(kInterSpeedsBlackwell))};
  if (gen == GpuGen::kHopper) return {kInterSpeedsHopper, static_cast<int>(std::size(kInterSpeedsHopper))};
  return {kInterSpeedsPreHopper, static_cast<int>(std::size(kInterSpeedsPreHopper))};
}

Speeds speedsFor(GpuGen gen) {
  if (gen == GpuGen::kBlackwell) return {kSpeedsBlackwell, static_cast<int>(std::size(kSpeedsBlackwell))};
  if (gen == GpuGen::kHopper) return {kSpeedsHopper, static_cast<int>(std::size(kSpeedsHopper))};
  return {kSpeedsPreHopper, static_cast<int>(std::size(kSpeedsPreHopper))};
}

// Channels and per-channel speed on a ring of bottleneck ringBw: the fastest tabled speed that fits
// at least once, as many rings as fit at it; then twice the rings at half the speed where the
// speed is at least 25 GB/s (on Hopper and later, when at least 50 GB/s or at most 4 rings); then
// the fastest tabled speed that the doubled count still fits.
void channelsFor(float ringBw, GpuGen gen, int* channels, float* speed) {
  const Speeds s = speedsFor(gen);
  int i = 0;
  while (i < s.n - 1 && s.v[i] > ringBw) ++i;
  float bw = s.v[i];
  int ch = std::clamp(static_cast<int>(ringBw / bw), 1, kMaxRings / 2);
  const bool dup = bw >= 25.0f && !(gen >= GpuGen::kHopper && bw < 50.0f && ch > 4);
  if (dup) {
    const int doubled = std::min(2 * ch, kMaxRings);
    bw /= static_cast<float>((doubled + ch - 1) / ch);
    ch = doubled;
    for (int j = 0; j < s.n; ++j) {
      if (s.v[j] > bw && s.v[j] * static_cast<float>(ch) <= ringBw) {
        bw = s.v[j];
        break;
      }
    }
  }
  *channels = ch;
  *speed = bw;
}

// The ring order over gpus 0..n-1: the one whose narrowest hop is widest, then whose worst hop is
// the best path type, then the first in lexicographic order (index order where all are alike, as on
// an NVSwitch). Every order is tried up to kExhaustiveRingGpus GPUs (7! = 5040 rings of 8 hops);
// beyond that the index order is kept (larger nodes come with the multi-node search).
constexpr int kExhaustiveRingGpus = 8;

struct RingScore {
  float bw = 0;
  PathType worst = PathType::kDis;
  bool connected = false;
};

RingScore scoreRing(const TopoSystem& sys, const std::vector<int>& order) {
  RingScore s;
  const int n = static_cast<int>(order.size());
  for (int i = 0; i < n; ++i) {
    const TopoPath& p = sys.path(NodeType::kGpu, order[i], NodeType::kGpu, order[(i + 1) % n]);
    if (p.type == PathType::kDis || p.bw <= 0) return s;
    s.bw = i == 0 ? p.bw : std::min(s.bw, p.bw);
    s.worst = i == 0 ? p.type : std::max(s.worst, p.type);
  }
  s.connected = true;
  return s;
}

bool better(const RingScore& a, const RingScore& b) {
  if (a.connected != b.connected) return a.connected;
  if (a.bw != b.bw) return a.bw > b.bw;
  return a.worst < b.worst;
}

}  // namespace

Status singleNodeRings(const TopoSystem& sys, int nGpus, SingleNodeRings* out) {
  const int have = sys.count(NodeType::kGpu);
  if (have == 0)
    return CC_ERROR(Status::kInvalidArgument, "the topology %s has no GPU; cc-plan plans GPU systems only so far",
                    sys.source.c_str());
  if (have < 2)
    return CC_ERROR(Status::kInvalidArgument, "the topology %s has %d GPU; a ring needs at least 2", sys.source.c_str(),
                    have);
  if (nGpus < 2 || nGpus > have)
    return CC_ERROR(Status::kInvalidArgument, "%d GPUs asked of %s, which has %d: use 2..%d", nGpus, sys.source.c_str(),
                    have, have);
  std::vector<int> gpus(nGpus);
  for (int g = 0; g < nGpus; ++g) gpus[g] = g;
  return ringsOverGpus(sys, gpus, out);
}

Status ringsOverGpus(const TopoSystem& sys, const std::vector<int>& gpus, SingleNodeRings* out) {
  const int nGpus = static_cast<int>(gpus.size());
  if (nGpus < 2)
    return CC_ERROR(Status::kInvalidArgument, "a ring over %d GPU of %s: a ring needs at least 2", nGpus,
                    sys.source.c_str());
  SingleNodeRings r;
  int sm = 0;
  for (int g = 0; g < nGpus; ++g) {
    r.order.push_back(gpus[g]);
    const int gsm = sys.nodes(NodeType::kGpu)[gpus[g]].gpu.sm;
    sm = (g == 0 || (gsm > 0 && gsm < sm)) ? gsm : sm;
  }
  // The first GPU stays first (rotations of a ring are the same ring); the rest start sorted, so
  // the permutations below visit every order.
  std::sort(r.order.begin() + 1, r.order.end());
  RingScore best = scoreRing(sys, r.order);
  if (nGpus <= kExhaustiveRingGpus) {
    std::vector<int> order = r.order;
    while (std::next_permutation(order.begin() + 1, order.end())) {
      const RingScore s = scoreRing(sys, order);
      if (better(s, best)) {
        best = s;
        r.order = order;
      }
    }
  }
  if (!best.connected)
    return CC_ERROR(Status::kInvalidArgument, "%d GPUs of %s cannot form a ring: some pair is not connected", nGpus,
                    sys.source.c_str());
  r.ringBw = best.bw;
  r.worstPath = best.worst;
  RingGraph& g = r.graph;
  g.nRanks = nGpus;
  g.nNodes = 1;
  g.gen = gpuGenFromSm(sm);
  g.intraHop = best.worst <= PathType::kNvb ? HopClass::kNvlink : HopClass::kPci;
  channelsFor(best.bw, g.gen, &g.maxChannels, &g.bwPerChannel);
  *out = std::move(r);
  return kOk;
}

Status ringsOverBusIds(const TopoSystem& sys, const std::vector<int64_t>& busIds, SingleNodeRings* out) {
  std::vector<int> gpus;
  for (int64_t busId : busIds) {
    const int g = sys.find(NodeType::kGpu, busId);
    if (g < 0)
      return CC_ERROR(Status::kInvalidArgument, "the GPU at %s is not in the topology %s", busIdToString(busId).c_str(),
                      sys.source.c_str());
    if (std::find(gpus.begin(), gpus.end(), g) != gpus.end())
      return CC_ERROR(Status::kInvalidArgument, "the GPU at %s is given twice: a ring takes one rank a GPU",
                      busIdToString(busId).c_str());
    gpus.push_back(g);
  }
  return ringsOverGpus(sys, gpus, out);
}

namespace {

// GPUs of the first nGpus ordered by their path to NET `net`: best path type, then widest, then
// lowest index.
std::vector<int> gpusByNearness(const TopoSystem& sys, int nGpus, int net) {
  std::vector<int> gpus(nGpus);
  for (int g = 0; g < nGpus; ++g) gpus[g] = g;
  std::stable_sort(gpus.begin(), gpus.end(), [&](int a, int b) {
    const TopoPath& pa = sys.path(NodeType::kGpu, a, NodeType::kNet, net);
    const TopoPath& pb = sys.path(NodeType::kGpu, b, NodeType::kNet, net);
    if (pa.type != pb.type) return pa.type < pb.type;
    return pa.bw > pb.bw;
  });
  return gpus;
}

}  // namespace

Status clusterRings(const TopoSystem& sys, int nGpus, int nNodes, ClusterRings* out) {
  ClusterRings r;
  const int have = sys.count(NodeType::kGpu);
  if (nNodes > 1 && nGpus == 1 && have >= 1) {
    // One GPU a node: no ring inside it, every hop crosses the network.
    r.node.order = {0};
    r.node.graph.nRanks = 1;
    r.node.graph.gen = gpuGenFromSm(sys.nodes(NodeType::kGpu)[0].gpu.sm);
    r.node.graph.intraHop = HopClass::kNvlink;
  } else {
    CC_CHECK(singleNodeRings(sys, nGpus, &r.node));
  }
  r.nNodes = nNodes;
  r.graph = r.node.graph;
  if (nNodes <= 1) {
    *out = std::move(r);
    return kOk;
  }
  const int nNets = sys.count(NodeType::kNet);
  if (nNets == 0)
    return CC_ERROR(Status::kInvalidArgument,
                    "the topology %s has no NIC (no <net> element), so %d nodes of it cannot be joined: describe a "
                    "node with its NICs, or plan one node",
                    sys.source.c_str(), nNodes);
  // The NETs nearest the GPUs: the best path type any of them has from one of the job's GPUs.
  PathType nearest = PathType::kDis;
  for (int n = 0; n < nNets; ++n)
    for (int g = 0; g < nGpus; ++g) nearest = std::min(nearest, sys.path(NodeType::kGpu, g, NodeType::kNet, n).type);
  if (nearest == PathType::kDis)
    return CC_ERROR(Status::kInvalidArgument, "no GPU of %s reaches a NIC, so its nodes cannot be joined",
                    sys.source.c_str());
  r.nicBw = 0;
  r.gpuNicBw = 0;
  r.segmentBw = 0;
  std::vector<int> entries(static_cast<size_t>(nGpus), 0);
  for (int n = 0; n < nNets; ++n) {
    const std::vector<int> near = gpusByNearness(sys, nGpus, n);
    if (sys.path(NodeType::kGpu, near[0], NodeType::kNet, n).type != nearest) continue;
    RailSegment seg;
    seg.net = n;
    // Entry the nearest GPU (among equally near ones the one fewest segments enter at: two NICs
    // sharing a switch with two GPUs enter one each), exit the next nearest, the rest in the node's
    // ring order.
    const TopoPath& best = sys.path(NodeType::kGpu, near[0], NodeType::kNet, n);
    size_t pick = 0;
    for (size_t i = 1; i < near.size(); ++i) {
      const TopoPath& p = sys.path(NodeType::kGpu, near[i], NodeType::kNet, n);
      if (p.type != best.type || p.bw != best.bw) break;
      if (entries[near[i]] < entries[near[pick]]) pick = i;
    }
    const int entry = near[pick], exit = nGpus == 1 ? entry : near[pick == 0 ? 1 : 0];
    ++entries[entry];
    seg.gpus.push_back(entry);
    const int at = static_cast<int>(std::find(r.node.order.begin(), r.node.order.end(), entry) - r.node.order.begin());
    for (int i = 1; i < nGpus; ++i) {
      const int gpu = r.node.order[(at + i) % nGpus];
      if (gpu != exit) seg.gpus.push_back(gpu);
    }
    if (nGpus > 1) seg.gpus.push_back(exit);
    // One GPU a node has no hop inside the node to limit the channels.
    float hopBw = nGpus == 1 ? std::numeric_limits<float>::max() : 0;
    for (int i = 0; i + 1 < nGpus; ++i) {
      const float bw = sys.path(NodeType::kGpu, seg.gpus[i], NodeType::kGpu, seg.gpus[i + 1]).bw;
      hopBw = i == 0 ? bw : std::min(hopBw, bw);
    }
    const float nicBw = sys.path(NodeType::kGpu, entry, NodeType::kNet, n).bw;
    const float gpuNic = std::min(nicBw, sys.path(NodeType::kGpu, exit, NodeType::kNet, n).bw);
    float netLinkBw = 0;
    for (const TopoLink& l : sys.nodes(NodeType::kNet)[n].links) netLinkBw = std::max(netLinkBw, l.bw);
    const bool first = r.segments.empty();
    r.nicBw = first ? netLinkBw : std::min(r.nicBw, netLinkBw);
    r.gpuNicBw = first ? gpuNic : std::min(r.gpuNicBw, gpuNic);
    r.segmentBw = first ? hopBw : std::min(r.segmentBw, hopBw);
    r.segments.push_back(std::move(seg));
  }
  // The speed that carries the most in all: each NET floor(share / speed) channels, the GPUs'
  // links channels x speed; the fastest speed among equals.
  const float perNet = std::min(r.nicBw, r.gpuNicBw);
  const Speeds s = interSpeedsFor(r.graph.gen);
  int bestCh = 0;
  float bestSpeed = 0;
  for (int i = 0; i < s.n; ++i) {
    const float speed = s.v[i];
    const int viaNets = static_cast<int>(r.segments.size()) * static_cast<int>(std::min(perNet / speed, 1024.0f));
    const int viaGpus = static_cast<int>(std::min(r.segmentBw / speed, 1024.0f));
    const int ch = std::min({viaNets, viaGpus, kMaxRings});
    if (ch >= 1 && static_cast<float>(ch) * speed > static_cast<float>(bestCh) * bestSpeed * (1 + 1e-6f)) {
      bestCh = ch;
      bestSpeed = speed;
    }
  }
  if (bestCh == 0)
    return CC_ERROR(Status::kInvalidArgument, "the NICs of %s are slower than NCCL's slowest channel speed (%.2f GB/s)",
                    sys.source.c_str(), static_cast<double>(s.v[s.n - 1]));
  // Channel c runs on segment c % segments; the list holds one per channel.
  const size_t rails = r.segments.size();
  for (int c = static_cast<int>(rails); c < bestCh; ++c) r.segments.push_back(r.segments[c % rails]);
  r.segments.resize(static_cast<size_t>(bestCh));
  RingGraph& g = r.graph;
  g.nRanks = nGpus * nNodes;
  g.nNodes = nNodes;
  g.maxChannels = bestCh;
  g.bwPerChannel = bestSpeed;
  const std::vector<TopoNode>& cpus = sys.nodes(NodeType::kCpu);
  g.amdCpu = !cpus.empty() && cpus[0].cpu.vendor == "AuthenticAMD";
  g.netLatencyUs = 0;
  for (const TopoNode& net : sys.nodes(NodeType::kNet)) g.netLatencyUs = std::max(g.netLatencyUs, net.net.latencyUs);
  *out = std::move(r);
  return kOk;
}

}  // namespace collcomm::detail
