// Single-node rings from the topology graph (ring_channels.h). The speed tables and the channel
// rules are NCCL's (src/graph/search.cc: speedArrayIntra / sm90SpeedArrayIntra /
// sm100SpeedArrayIntra, ncclTopoDupChannels, MAXCHANNELS / 2 rings).
#include "plan/ring_channels.h"

#include <algorithm>
#include <iterator>
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

struct Speeds {
  const float* v;
  int n;
};

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
    return CC_ERROR(Status::kInvalidArgument, "the topology %s has %d GPU; a ring needs at least 2",
                    sys.source.c_str(), have);
  if (nGpus < 2 || nGpus > have)
    return CC_ERROR(Status::kInvalidArgument, "%d GPUs asked of %s, which has %d: use 2..%d", nGpus, sys.source.c_str(),
                    have, have);
  SingleNodeRings r;
  int sm = 0;
  for (int g = 0; g < nGpus; ++g) {
    r.order.push_back(g);
    const int gsm = sys.nodes(NodeType::kGpu)[g].gpu.sm;
    sm = (g == 0 || (gsm > 0 && gsm < sm)) ? gsm : sm;
  }
  RingScore best = scoreRing(sys, r.order);
  if (nGpus <= kExhaustiveRingGpus) {
    // GPU 0 stays first: rotations of a ring are the same ring.
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
    return CC_ERROR(Status::kInvalidArgument, "the first %d GPUs of %s cannot form a ring: some pair is not connected",
                    nGpus, sys.source.c_str());
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

}  // namespace collcomm::detail
