// The cost model's constants and arithmetic (cost_model.h). Sources: "NCCL" is NVIDIA NCCL's
// src/graph/tuning.cc (latency and bandwidth tables, protocol efficiencies, the network overhead and ring plateau;
// checked against its 2026-06 sources) and src/include/device.h + src/init.cc (per-protocol FIFO buffer sizes); the
// fill term is ours (below). The constants are NCCL's published numbers; the code is written anew.
#include "plan/cost_model.h"

#include <algorithm>
#include <limits>

namespace collcomm::detail {

namespace {

// Rows of the per-algorithm tables (NCCL lists Tree first, then Ring).
constexpr int kTreeRow = 0, kRingRow = 1;
// Columns of the per-node-count tables: one node, two nodes, more (NCCL's N1 / N2 / N4).
constexpr int kNodeCols = 3;

struct CostConstants {
  // Base latency of one operation per algorithm (Tree, Ring) and protocol (LL, LL128, Simple), us.
  // NCCL baseLat.
  double baseLatUs[2][kModelProtoCount];
  // Hardware latency of one hop per hop class, algorithm (Tree, Ring) and protocol, us. NCCL hwLat.
  double hopLatUs[kHopClassCount][2][kModelProtoCount];
  // LL's ceiling on bus bandwidth, GB/s: LL moves 8 bytes of data in every 16 (a flag per 4-byte
  // word) and is bound by the flag polling. One node: per GPU generation (NCCL llMaxBws, N1
  // column). Several nodes: per CPU vendor, two nodes and more (NCCL's N2 / N4 columns of its
  // first two rows, which it reads as Intel and AMD when nodes > 1).
  double llMaxBusBw[kGpuGenCount];
  double llMaxBusBwMultiNode[2][2];  // [amd][nodes > 2]
  // LL's share of the links' bandwidth on a ring (half of each line is flags). NCCL: busBw * .5.
  double llLinkShare;
  // LL128 on a ring: 120 of every 128 bytes are data; NCCL applies 0.92 (a little under 120/128).
  double ll128LinkShare;
  // Ring LL128's ceiling per channel, GB/s. NCCL perChMaxRingLL128Bws.
  double ll128MaxPerChannel[kGpuGenCount][kNodeCols];
  // Tree AllReduce: its share of the channels' bandwidth (NCCL: busBw * .92), capped per channel
  // (NCCL perChMaxTreeBws); LL a further 1/3.8 (capped by llMaxBusBw); LL128 7/9 on one node and
  // 120/128 across nodes, capped per channel (NCCL perChMaxTreeLL128Bws).
  double treeLinkShare;
  double treeMaxPerChannel[kGpuGenCount][kNodeCols];
  double treeLlShare;
  double treeLl128ShareOneNode, treeLl128ShareNodes;
  double treeLl128MaxPerChannel[kGpuGenCount][kNodeCols];
  // Multi-node rings: a network post costs the proxy this much per ring step, us (NCCL
  // getNetOverhead: 2 on AMD x86, else 1), three times with Simple; an intra-node step costs at
  // least that. And Simple ring AllReduce across nodes has its latency multiplied by this (NCCL's
  // "plateau effect of ring": 1.9 before Ampere, 1.4 from Ampere) once each rank's piece of a
  // channel is at least 64 bytes.
  double netOverheadUs[2];  // [amd]
  double netOverheadSimpleFactor;
  double ringPlateau[2];  // [Ampere or later]
  // Payload of one FIFO step per protocol, bytes: the unit a ring hop forwards. NCCL: buffer
  // size / NCCL_STEPS (8). Simple 4 MiB / 8; LL 512 KiB of 16-byte lines / 8, half of it data;
  // LL128 120 elements x 640 threads x 8 B = 614400 B of lines a step, 15/16 of it data.
  double stepBytes[kModelProtoCount];
};

constexpr CostConstants kCostConstants = {
    .baseLatUs = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}},
    .hopLatUs =
        {
            {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLink: Tree, Ring
            {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCIe
            {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // network
        },
    .llMaxBusBw = {39.0, 87.7, 141.0, 282.0},
    .llMaxBusBwMultiNode = {{39.0, 20.4}, {22.5, 19.0}},
    .llLinkShare = 0.5,
    .ll128LinkShare = 0.92,
    .ll128MaxPerChannel = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}},
    .treeLinkShare = 0.92,
    .treeMaxPerChannel = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}},
    .treeLlShare = 1.0 / 3.8,
    .treeLl128ShareOneNode = 7.0 / 9.0,
    .treeLl128ShareNodes = 120.0 / 128.0,
    .treeLl128MaxPerChannel = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}},
    .netOverheadUs = {1.0, 2.0},
    .netOverheadSimpleFactor = 3.0,
    .ringPlateau = {1.9, 1.4},
    .stepBytes = {32768.0, 576000.0, 524288.0},
};

int idx(ModelProto p) { return static_cast<int>(p); }

int nodeCol(int nNodes) { return nNodes <= 1 ? 0 : nNodes == 2 ? 1 : 2; }

// floor(log2(x)) for x >= 1.
int log2Floor(long long x) {
  int l = 0;
  while (x > 1) {
    x >>= 1;
    ++l;
  }
  return l;
}

// Hops a ring operation's data crosses in sequence: AllReduce is a reduce-scatter then an
// all-gather around the ring, 2(n-1) steps; the others n-1 (Broadcast and Reduce are chains).
long long ringHops(CollKind kind, long long n) { return kind == CollKind::kAllReduce ? 2 * (n - 1) : n - 1; }

// Of those, the ones that cross the network (NCCL's count: the ring enters and leaves every node
// once per round).
long long ringNetHops(CollKind kind, long long nNodes) {
  if (nNodes <= 1) return 0;
  return kind == CollKind::kAllReduce ? 2 * (nNodes - 1) : nNodes - 1;
}

// How many pieces each channel cuts its share into per ring round: the ring collectives hand one
// piece per rank around; Broadcast and Reduce stream their share whole.
long long piecesPerChannel(CollKind kind, long long n) {
  return kind == CollKind::kBroadcast || kind == CollKind::kReduce ? 1 : n;
}

double llCap(const RingGraph& g) {
  const CostConstants& k = kCostConstants;
  if (g.nNodes <= 1) return k.llMaxBusBw[static_cast<int>(g.gen)];
  return k.llMaxBusBwMultiNode[g.amdCpu ? 1 : 0][g.nNodes > 2 ? 1 : 0];
}

double ringBusBw(const RingGraph& g, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  const double links = static_cast<double>(channels) * g.bwPerChannel;
  const int gen = static_cast<int>(g.gen);
  switch (proto) {
    case ModelProto::kLL:
      return std::min(llCap(g), links * k.llLinkShare);
    case ModelProto::kLL128:
      return std::min(links * k.ll128LinkShare, channels * k.ll128MaxPerChannel[gen][nodeCol(g.nNodes)]);
    case ModelProto::kSimple:
      break;
  }
  return links;
}

double treeBusBw(const RingGraph& g, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  const int gen = static_cast<int>(g.gen);
  const int col = nodeCol(g.nNodes);
  double bw = std::min(channels * g.bwPerChannel * k.treeLinkShare, channels * k.treeMaxPerChannel[gen][col]);
  if (proto == ModelProto::kLL) bw = std::min(bw * k.treeLlShare, llCap(g));
  if (proto == ModelProto::kLL128)
    bw = std::min(bw * (g.nNodes == 1 ? k.treeLl128ShareOneNode : k.treeLl128ShareNodes),
                  channels * k.treeLl128MaxPerChannel[gen][col]);
  return bw;
}

// The latency of one network hop: NCCL charges the Tree's network latency to rings of one rank a
// node (every hop's latency is exposed), and a NIC's own latency once more with Simple (the flush).
double netHopLatUs(const RingGraph& g, int algoRow, ModelProto proto) {
  const CostConstants& k = kCostConstants;
  const int ppn = g.nRanks / std::max(g.nNodes, 1);
  const int row = ppn == 1 ? kTreeRow : algoRow;
  const double nicLat = g.netLatencyUs * (proto == ModelProto::kSimple ? 2 : 1);
  return k.hopLatUs[static_cast<int>(HopClass::kNet)][row][idx(proto)] + nicLat;
}

}  // namespace

const char* modelProtoName(ModelProto p) {
  switch (p) {
    case ModelProto::kLL:
      return "LL";
    case ModelProto::kLL128:
      return "LL128";
    case ModelProto::kSimple:
      break;
  }
  return "Simple";
}

const char* hopClassName(HopClass h) {
  switch (h) {
    case HopClass::kNvlink:
      return "NVLink";
    case HopClass::kPci:
      return "PCIe";
    case HopClass::kNet:
      break;
  }
  return "NET";
}

GpuGen gpuGenFromSm(int sm) {
  if (sm >= 100) return GpuGen::kBlackwell;
  if (sm >= 90) return GpuGen::kHopper;
  if (sm >= 80) return GpuGen::kAmpere;
  return GpuGen::kVolta;
}

double busBwFactor(CollKind kind, int nRanks) {
  const double n = nRanks;
  if (kind == CollKind::kAllReduce) return 2.0 * (n - 1) / n;
  if (kind == CollKind::kAllGather || kind == CollKind::kReduceScatter) return (n - 1) / n;
  return 1.0;
}

// time = latency + fill + bytes / algbw, where
// - latency = base + hops x hop latency (NCCL's ring latency; for Broadcast and Reduce NCCL adds
//   one hop's latency when all channels share one ring, we count every hop of the chain); across
//   nodes the network hops pay the network's latency, the others at least the network post
//   overhead, and Simple AllReduce NCCL's plateau factor;
// - algbw = busbw / busBwFactor: the model's bus bandwidth is what each rank's links carry;
// - fill: a ring hop forwards a slice only once it has it whole, so before the ring streams at
//   full rate the first slice crosses every hop: hops x slice / per-channel bandwidth, with the
//   slice one FIFO step or, for small messages, the piece each channel hands on. NCCL's model
//   has no such term; without it the model overshoots published busbw by ~30% at 128 MiB on 8
//   A100s (docs/planning.md), where a step (512 KiB) over one channel's 20 GB/s costs 26 us a hop.
CostBreakdown ringCost(const RingGraph& g, CollKind kind, size_t bytes, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  CostBreakdown c;
  const long long n = g.nRanks;
  const long long nodes = std::max(g.nNodes, 1);
  channels = std::clamp(channels, 1, std::max(g.maxChannels, 1));
  if (n < 2) return c;
  const long long hops = ringHops(kind, n);
  const long long netHops = ringNetHops(kind, nodes);
  double intraLat = k.hopLatUs[static_cast<int>(g.intraHop)][kRingRow][idx(proto)];
  double netLat = 0;
  if (nodes > 1) {
    const double overhead =
        k.netOverheadUs[g.amdCpu ? 1 : 0] * (proto == ModelProto::kSimple ? k.netOverheadSimpleFactor : 1.0);
    intraLat = std::max(intraLat, overhead);
    netLat = netHopLatUs(g, kRingRow, proto);
  }
  c.latencyUs = k.baseLatUs[kRingRow][idx(proto)] + static_cast<double>(hops - netHops) * intraLat +
                static_cast<double>(netHops) * netLat;
  if (nodes > 1 && proto == ModelProto::kSimple && kind == CollKind::kAllReduce &&
      static_cast<double>(bytes) / (static_cast<double>(channels) * static_cast<double>(n)) >= 64)
    c.latencyUs *= k.ringPlateau[g.gen >= GpuGen::kAmpere ? 1 : 0];
  c.busBw = ringBusBw(g, proto, channels);
  if (c.busBw <= 0) {
    c.timeUs = c.latencyUs;
    return c;
  }
  const double perChannelBw = c.busBw / channels;
  const double piece =
      static_cast<double>(bytes) / (static_cast<double>(channels) * static_cast<double>(piecesPerChannel(kind, n)));
  const double slice = std::min(k.stepBytes[idx(proto)], piece);
  // GB/s = 1e3 bytes per us.
  c.fillUs = static_cast<double>(hops) * slice / (perChannelBw * 1e3);
  const double algBw = c.busBw / busBwFactor(kind, static_cast<int>(n));
  c.wireUs = static_cast<double>(bytes) / (algBw * 1e3);
  c.timeUs = c.latencyUs + c.fillUs + c.wireUs;
  return c;
}

// NCCL's tree model plus the fill: time = latency + fill + bytes / algbw, where
// - latency = base + 2 x ((ranks per node - 1) x intra-node hop latency + floor(log2 nodes) x
//   network hop latency): up the chain and the tree, then down again;
// - algbw = busbw x 0.5 (every byte goes up and comes down), with busbw the channels' bandwidth
//   times the tree's share and per-channel cap (treeBusBw);
// - fill: as on rings, the first slice (one FIFO step, or a channel's whole share when smaller)
//   crosses every hop of the way up and down before the pipeline streams. NCCL instead corrects
//   its tree bandwidth per size (treeCorrectionFactor); one account of medium sizes for both
//   algorithms keeps the argmin between them fair, and a tree's depth is small (2 x (7 + 13) hops
//   on 12,500 nodes of 8) so the term stays small where trees matter.
CostBreakdown treeCost(const RingGraph& g, CollKind kind, size_t bytes, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  CostBreakdown c;
  if (!modelHasAlgo(Algorithm::kTree, kind)) {
    c.applies = false;
    c.timeUs = std::numeric_limits<double>::infinity();
    return c;
  }
  const int n = g.nRanks;
  const int nodes = std::max(g.nNodes, 1);
  channels = std::clamp(channels, 1, std::max(g.maxChannels, 1));
  if (n < 2) return c;
  const int ppn = n / nodes;
  const int hopsUp = (ppn - 1) + log2Floor(nodes);
  const double intraLat = k.hopLatUs[static_cast<int>(g.intraHop)][kTreeRow][idx(proto)];
  const double netLat = nodes > 1 ? netHopLatUs(g, kTreeRow, proto) : 0.0;
  c.latencyUs = k.baseLatUs[kTreeRow][idx(proto)] + 2.0 * ((ppn - 1) * intraLat + log2Floor(nodes) * netLat);
  c.busBw = treeBusBw(g, proto, channels);
  if (c.busBw <= 0) {
    c.timeUs = c.latencyUs;
    return c;
  }
  const double slice = std::min(k.stepBytes[idx(proto)], static_cast<double>(bytes) / channels);
  c.fillUs = 2.0 * hopsUp * slice / (c.busBw / channels * 1e3);
  const double algBw = c.busBw * 0.5;
  c.wireUs = static_cast<double>(bytes) / (algBw * 1e3);
  c.timeUs = c.latencyUs + c.fillUs + c.wireUs;
  return c;
}

bool modelHasAlgo(Algorithm algo, CollKind kind) {
  if (algo == Algorithm::kRing) return true;
  return algo == Algorithm::kTree && kind == CollKind::kAllReduce;
}

CostBreakdown modelCost(const RingGraph& g, Algorithm algo, CollKind kind, size_t bytes, ModelProto proto,
                        int channels) {
  if (algo == Algorithm::kTree) return treeCost(g, kind, bytes, proto, channels);
  if (algo == Algorithm::kRing) return ringCost(g, kind, bytes, proto, channels);
  // collcomm's two-rank one-shot AllReduce: each rank sends its whole input to the other at once,
  // one hop carrying every byte, which is a two-rank Broadcast's traffic.
  if (algo == Algorithm::kOneShot && kind == CollKind::kAllReduce && g.nRanks == 2)
    return ringCost(g, CollKind::kBroadcast, bytes, proto, channels);
  CostBreakdown none;
  none.applies = false;
  none.timeUs = std::numeric_limits<double>::infinity();
  return none;
}

ModelChoice chooseByModel(const RingGraph& g, CollKind kind, size_t bytes, const ModelChoiceLimits& limits) {
  ModelChoice best;
  bool have = false;
  const int maxCh = std::max(g.maxChannels, 1);
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree}) {
    if (limits.algo >= 0 && static_cast<int>(algo) != limits.algo) continue;
    if (!modelHasAlgo(algo, kind)) continue;
    for (int p = 0; p < kModelProtoCount; ++p) {
      if (limits.proto >= 0 && p != limits.proto) continue;
      if (!limits.allowLl128 && p == idx(ModelProto::kLL128) && limits.proto < 0) continue;
      const int lo = limits.channels > 0 ? std::min(limits.channels, maxCh) : 1;
      const int hi = limits.channels > 0 ? lo : maxCh;
      for (int ch = lo; ch <= hi; ++ch) {
        const CostBreakdown c = modelCost(g, algo, kind, bytes, static_cast<ModelProto>(p), ch);
        // Strictly better by a hair: equal times keep the fewer channels (and the earlier choice).
        if (!have || c.timeUs < best.cost.timeUs * (1 - 1e-9)) {
          best.algo = algo;
          best.proto = static_cast<ModelProto>(p);
          best.channels = ch;
          best.cost = c;
          have = true;
        }
      }
    }
  }
  if (!have) {
    // A forced algorithm that does not run this collective: nothing to choose.
    best.cost.applies = false;
    best.cost.timeUs = std::numeric_limits<double>::infinity();
  }
  return best;
}

}  // namespace collcomm::detail
