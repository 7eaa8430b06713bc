// The cost model's constants and arithmetic (cost_model.h). Sources: "NCCL" is NVIDIA NCCL's
// src/graph/tuning.cc (latency and bandwidth tables, protocol efficiencies) and
// src/include/device.h + src/init.cc (per-protocol FIFO buffer sizes), as of 2.2x; the fill term is
// ours (below).
#include "plan/cost_model.h"

#include <algorithm>

namespace collcomm::detail {

namespace {

struct CostConstants {
  // Base latency of a ring operation per protocol (LL, LL128, Simple), us. NCCL baseLat, Ring row.
  double ringBaseLatUs[kModelProtoCount];
  // Hardware latency of one ring hop per hop class and protocol, us. NCCL hwLat, Ring rows.
  double ringHopLatUs[kHopClassCount][kModelProtoCount];
  // LL's ceiling on bus bandwidth on one node, GB/s, per GPU generation: LL moves 8 bytes of data
  // in every 16 (a flag per 4-byte word) and is bound by the flag polling. NCCL llMaxBws, N1 column.
  double llMaxBusBw[kGpuGenCount];
  // LL's share of the links' bandwidth (half of each line is flags). NCCL: busBw * .5.
  double llLinkShare;
  // LL128: 120 of every 128 bytes are data; NCCL applies 0.92 (a little under 120/128).
  double ll128LinkShare;
  // LL128's ceiling per channel, GB/s, per GPU generation. NCCL perChMaxRingLL128Bws, N1 column.
  double ll128MaxPerChannel[kGpuGenCount];
  // Payload of one FIFO step per protocol, bytes: the unit a ring hop forwards. NCCL: buffer
  // size / NCCL_STEPS (8). Simple 4 MiB / 8; LL 512 KiB of 16-byte lines / 8, half of it data;
  // LL128 120 elements x 640 threads x 8 B = 614400 B of lines a step, 15/16 of it data.
  double stepBytes[kModelProtoCount];
};

constexpr CostConstants kCostConstants = {
    .ringBaseLatUs = {6.6, 14.0, 8.4},
    .ringHopLatUs =
        {
            {0.6, 1.9, 3.4},   // NVLink
            {1.0, 2.5, 5.7},   // PCIe
            {2.7, 4.0, 14.0},  // network
        },
    .llMaxBusBw = {39.0, 87.7, 141.0, 282.0},
    .llLinkShare = 0.5,
    .ll128LinkShare = 0.92,
    .ll128MaxPerChannel = {20.0, 20.0, 36.7, 40.0},
    .stepBytes = {32768.0, 576000.0, 524288.0},
};

int idx(ModelProto p) { return static_cast<int>(p); }

// Hops a ring operation's data crosses in sequence: AllReduce is a reduce-scatter then an
// all-gather around the ring, 2(n-1) steps; the others n-1 (Broadcast and Reduce are chains).
int ringHops(CollKind kind, int n) { return kind == CollKind::kAllReduce ? 2 * (n - 1) : n - 1; }

// How many pieces each channel cuts its share into per ring round: the ring collectives hand one
// piece per rank around; Broadcast and Reduce stream their share whole.
int piecesPerChannel(CollKind kind, int n) { return kind == CollKind::kBroadcast || kind == CollKind::kReduce ? 1 : n; }

double busBwFor(const RingGraph& g, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  const double links = static_cast<double>(channels) * g.bwPerChannel;
  const int gen = static_cast<int>(g.gen);
  switch (proto) {
    case ModelProto::kLL:
      return std::min(k.llMaxBusBw[gen], links * k.llLinkShare);
    case ModelProto::kLL128:
      return std::min(links * k.ll128LinkShare, channels * k.ll128MaxPerChannel[gen]);
    case ModelProto::kSimple:
      break;
  }
  return links;
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
//   one hop's latency when all channels share one ring, we count every hop of the chain);
// - algbw = busbw / busBwFactor: the model's bus bandwidth is what each rank's links carry;
// - fill: a ring hop forwards a slice only once it has it whole, so before the ring streams at
//   full rate the first slice crosses every hop: hops x slice / per-channel bandwidth, with the
//   slice one FIFO step or, for small messages, the piece each channel hands on. NCCL's model
//   has no such term; without it the model overshoots published busbw by ~30% at 128 MiB on 8
//   A100s (docs/planning.md), where a step (512 KiB) over one channel's 20 GB/s costs 26 us a hop.
CostBreakdown ringCost(const RingGraph& g, CollKind kind, size_t bytes, ModelProto proto, int channels) {
  const CostConstants& k = kCostConstants;
  CostBreakdown c;
  const int n = g.nRanks;
  channels = std::clamp(channels, 1, std::max(g.maxChannels, 1));
  if (n < 2) return c;
  const int hops = ringHops(kind, n);
  c.latencyUs = k.ringBaseLatUs[idx(proto)] + hops * k.ringHopLatUs[static_cast<int>(g.intraHop)][idx(proto)];
  c.busBw = busBwFor(g, proto, channels);
  if (c.busBw <= 0) {
    c.timeUs = c.latencyUs;
    return c;
  }
  const double perChannelBw = c.busBw / channels;
  const double piece = static_cast<double>(bytes) / (static_cast<double>(channels) * piecesPerChannel(kind, n));
  const double slice = std::min(k.stepBytes[idx(proto)], piece);
  // GB/s = 1e3 bytes per us.
  c.fillUs = hops * slice / (perChannelBw * 1e3);
  const double algBw = c.busBw / busBwFactor(kind, n);
  c.wireUs = static_cast<double>(bytes) / (algBw * 1e3);
  c.timeUs = c.latencyUs + c.fillUs + c.wireUs;
  return c;
}

ModelChoice chooseByModel(const RingGraph& g, CollKind kind, size_t bytes, const ModelChoiceLimits& limits) {
  ModelChoice best;
  bool have = false;
  const int maxCh = std::max(g.maxChannels, 1);
  for (int p = 0; p < kModelProtoCount; ++p) {
    if (limits.proto >= 0 && p != limits.proto) continue;
    if (!limits.allowLl128 && p == idx(ModelProto::kLL128) && limits.proto < 0) continue;
    const int lo = limits.channels > 0 ? std::min(limits.channels, maxCh) : 1;
    const int hi = limits.channels > 0 ? lo : maxCh;
    for (int ch = lo; ch <= hi; ++ch) {
      const CostBreakdown c = ringCost(g, kind, bytes, static_cast<ModelProto>(p), ch);
      // Strictly better by a hair: equal times keep the fewer channels (and the earlier protocol).
      if (!have || c.timeUs < best.cost.timeUs * (1 - 1e-9)) {
        best.proto = static_cast<ModelProto>(p);
        best.channels = ch;
        best.cost = c;
        have = true;
      }
    }
  }
  return best;
}

}  // namespace collcomm::detail
