// The cost model (plan/cost_model.h) and the single-node rings it is given (plan/ring_channels.h):
// channels from the topology fixtures, the terms of the time, and the argmin's choices.
#include "plan/cost_model.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "plan/ring_channels.h"
#include "topo/paths.h"
#include "topo/topo.h"

namespace collcomm::detail {
namespace {

std::string fixture(const char* name) {
  return std::string(COLLCOMM_SOURCE_DIR) + "/tests/fixtures/topologies/" + name;
}

SingleNodeRings ringsOf(const char* name, int gpus) {
  TopoSystem sys;
  EXPECT_TRUE(isOk(loadTopologyFile(fixture(name), &sys))) << threadLastError();
  SingleNodeRings r;
  EXPECT_TRUE(isOk(singleNodeRings(sys, gpus, &r))) << threadLastError();
  return r;
}

TEST(RingChannels, DgxA100GivesTwelveChannelsOfTwentyOverNvlink) {
  // 12 NVLinks x 20 GB/s into the NVSwitch fabric: 6 rings at 40 GB/s, doubled to 12 at 20.
  const SingleNodeRings r = ringsOf("dgx_a100.xml", 8);
  EXPECT_EQ(r.graph.nRanks, 8);
  EXPECT_EQ(r.graph.intraHop, HopClass::kNvlink);
  EXPECT_EQ(r.graph.gen, GpuGen::kAmpere);
  EXPECT_FLOAT_EQ(r.ringBw, 240.0f);
  EXPECT_EQ(r.graph.maxChannels, 12);
  EXPECT_FLOAT_EQ(r.graph.bwPerChannel, 20.0f);
}

TEST(RingChannels, DgxH100GivesTwelveChannelsOfThirtyForAnyGpuCount) {
  // 18 NVLinks x 20.6 GB/s: 6 rings at 60 GB/s, doubled to 12 at 30; a subset keeps each GPU's links.
  for (int gpus = 2; gpus <= 8; ++gpus) {
    const SingleNodeRings r = ringsOf("dgx_h100.xml", gpus);
    EXPECT_EQ(r.graph.nRanks, gpus);
    EXPECT_EQ(r.graph.gen, GpuGen::kHopper);
    EXPECT_EQ(r.graph.maxChannels, 12) << gpus;
    EXPECT_FLOAT_EQ(r.graph.bwPerChannel, 30.0f) << gpus;
  }
}

TEST(RingChannels, PcieRingsAreTypedPcie) {
  const SingleNodeRings r = ringsOf("pcie_4gpu_2socket.xml", 4);
  EXPECT_EQ(r.graph.intraHop, HopClass::kPci);
  EXPECT_GE(r.graph.maxChannels, 1);
  EXPECT_LE(r.graph.bwPerChannel * r.graph.maxChannels, r.ringBw);
}

TEST(RingChannels, GpuCountOutsideTheSystemIsAnErrorWithASentence) {
  TopoSystem sys;
  ASSERT_TRUE(isOk(loadTopologyFile(fixture("dgx_a100.xml"), &sys)));
  SingleNodeRings r;
  EXPECT_EQ(singleNodeRings(sys, 9, &r), Status::kInvalidArgument);
  EXPECT_NE(threadLastError().find("9 GPUs"), std::string::npos) << threadLastError();
  EXPECT_EQ(singleNodeRings(sys, 1, &r), Status::kInvalidArgument);
}

RingGraph a100() { return ringsOf("dgx_a100.xml", 8).graph; }

TEST(CostModel, TermsFollowNcclsRingLatencyAndBandwidth) {
  const RingGraph g = a100();
  // Simple on 8 ranks: 8.4 + 14 x 3.4 us; bus bandwidth 12 x 20 GB/s; algbw = busbw x 8 / 14.
  const CostBreakdown c = ringCost(g, CollKind::kAllReduce, size_t{1} << 30, ModelProto::kSimple, 12);
  EXPECT_NEAR(c.latencyUs, 8.4 + 14 * 3.4, 1e-9);
  EXPECT_NEAR(c.busBw, 240.0, 1e-9);
  EXPECT_NEAR(c.wireUs, (1 << 30) / (240.0 * 8 / 14 * 1e3), 1e-6);
  // Fill: 14 hops x one 512 KiB step at 20 GB/s.
  EXPECT_NEAR(c.fillUs, 14 * 524288.0 / 20e3, 1e-6);
  EXPECT_NEAR(c.timeUs, c.latencyUs + c.fillUs + c.wireUs, 1e-9);
  // LL: half the links, capped at Ampere's 87.7 GB/s; LL128: 0.92 of the links, 20 GB/s a channel.
  EXPECT_NEAR(ringCost(g, CollKind::kAllReduce, 1 << 20, ModelProto::kLL, 12).busBw, 87.7, 1e-9);
  EXPECT_NEAR(ringCost(g, CollKind::kAllReduce, 1 << 20, ModelProto::kLL, 4).busBw, 40.0, 1e-9);
  EXPECT_NEAR(ringCost(g, CollKind::kAllReduce, 1 << 20, ModelProto::kLL128, 12).busBw, 220.8, 1e-6);
}

TEST(CostModel, TimeGrowsWithSizeForEveryProtocolAndCollective) {
  const RingGraph g = a100();
  for (CollKind k :
       {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kBroadcast, CollKind::kReduce})
    for (int p = 0; p < kModelProtoCount; ++p) {
      double last = 0;
      for (size_t b = 8; b <= (size_t{1} << 34); b *= 4) {
        const double t = ringCost(g, k, b, static_cast<ModelProto>(p), 12).timeUs;
        EXPECT_GT(t, last) << collName(k) << " " << modelProtoName(static_cast<ModelProto>(p)) << " " << b;
        last = t;
      }
    }
}

TEST(CostModel, ArgminPicksLlSmallAndSimpleLarge) {
  const RingGraph g = a100();
  const ModelChoice small = chooseByModel(g, CollKind::kAllReduce, 8);
  EXPECT_EQ(small.proto, ModelProto::kLL);
  const ModelChoice large = chooseByModel(g, CollKind::kAllReduce, size_t{1} << 30);
  EXPECT_EQ(large.proto, ModelProto::kSimple);
  EXPECT_EQ(large.channels, 12);
  // The argmin is no worse than any forced choice.
  for (size_t b : {size_t{8}, size_t{1} << 20, size_t{8} << 20, size_t{128} << 20})
    for (int p = 0; p < kModelProtoCount; ++p)
      for (int ch = 1; ch <= g.maxChannels; ++ch)
        EXPECT_LE(chooseByModel(g, CollKind::kAllReduce, b).cost.timeUs,
                  ringCost(g, CollKind::kAllReduce, b, static_cast<ModelProto>(p), ch).timeUs + 1e-9);
}

TEST(CostModel, LlUsesTheFewestChannelsThatReachItsCap) {
  // Hopper's LL tops out at 141 GB/s: 10 channels of 30 GB/s x 0.5 reach it, 12 add nothing.
  const RingGraph g = ringsOf("dgx_h100.xml", 8).graph;
  const ModelChoice c = chooseByModel(g, CollKind::kAllReduce, 64);
  EXPECT_EQ(c.proto, ModelProto::kLL);
  EXPECT_EQ(c.channels, 10);
}

TEST(CostModel, LimitsAreHonoured) {
  const RingGraph g = a100();
  ModelChoiceLimits forced;
  forced.proto = static_cast<int>(ModelProto::kSimple);
  forced.channels = 3;
  const ModelChoice c = chooseByModel(g, CollKind::kAllReduce, 8, forced);
  EXPECT_EQ(c.proto, ModelProto::kSimple);
  EXPECT_EQ(c.channels, 3);
  ModelChoiceLimits noLl128;
  noLl128.allowLl128 = false;
  for (size_t b = 8; b <= (size_t{1} << 32); b *= 2)
    EXPECT_NE(chooseByModel(g, CollKind::kAllReduce, b, noLl128).proto, ModelProto::kLL128) << b;
}

TEST(CostModel, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllReduce, 8), 14.0 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kReduce, 8), 1.0);
}

}  // namespace
}  // namespace collcomm::detail

namespace collcomm::detail {
namespace {

TEST(RingChannels, RingFollowsTheNvlinksWhateverTheNumbering) {
  // Four GPUs whose NVLinks form the cycle 0-2-1-3 under one CPU: index order would relay 0->1
  // through a GPU (NVB); the ring the search keeps crosses direct NVLinks only.
  TopoSystem sys;
  sys.source = "a made-up 4-GPU NVLink cycle";
  const NodeRef cpu = sys.addNode(NodeType::kCpu, 0);
  NodeRef gpu[4];
  for (int i = 0; i < 4; ++i) {
    gpu[i] = sys.addNode(NodeType::kGpu, 0x1000 * (i + 1));
    sys.node(gpu[i]).gpu.sm = 80;
    sys.connect(gpu[i], cpu, LinkType::kPci, 24.0f);
  }
  for (auto [a, b] : {std::pair{0, 2}, std::pair{2, 1}, std::pair{1, 3}, std::pair{3, 0}})
    sys.connect(gpu[a], gpu[b], LinkType::kNvl, 40.0f);
  computePaths(&sys, PathOptions{});
  SingleNodeRings r;
  ASSERT_TRUE(isOk(singleNodeRings(sys, 4, &r))) << threadLastError();
  EXPECT_EQ(r.order, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(r.worstPath, PathType::kNvl);
  EXPECT_EQ(r.graph.intraHop, HopClass::kNvlink);
  EXPECT_FLOAT_EQ(r.ringBw, 40.0f);
}

}  // namespace
}  // namespace collcomm::detail
