// A GPU communicator with one rank a device plans from the topology: its GPUs found by bus id
// (plan/ring_channels.h ringsOverBusIds) and priced by the cost model (plan/tuner.h
// planGpuCollective with a model), within what COLLCOMM_ALGO and COLLCOMM_PROTO force.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/ring_channels.h"
#include "plan/tuner.h"
#include "topo/topo.h"

namespace collcomm::detail {
namespace {

TopoSystem dgxH100() {
  TopoSystem sys;
  EXPECT_TRUE(
      isOk(loadTopologyFile(std::string(COLLCOMM_SOURCE_DIR) + "/tests/fixtures/topologies/dgx_h100.xml", &sys)))
      << threadLastError();
  return sys;
}

int64_t busIdOf(const char* text) {
  int64_t id = -1;
  EXPECT_TRUE(parseBusId(text, &id)) << text;
  return id;
}

TEST(GpuModelRings, FindsTheCommunicatorsGpusByBusId) {
  const TopoSystem sys = dgxH100();
  // GPUs 2, 0 and 1 of the fixture, as ranks 0, 1 and 2 might have them: the first stays first.
  SingleNodeRings r;
  ASSERT_TRUE(
      isOk(ringsOverBusIds(sys, {busIdOf("0000:3a:00.0"), busIdOf("0000:18:00.0"), busIdOf("0000:2a:00.0")}, &r)))
      << threadLastError();
  EXPECT_EQ(r.order, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(r.graph.nRanks, 3);
  EXPECT_EQ(r.graph.intraHop, HopClass::kNvlink);
  EXPECT_EQ(r.graph.gen, GpuGen::kHopper);
  // The same channels as the first three GPUs: every H100 of the node has the same NVSwitch links.
  SingleNodeRings first;
  ASSERT_TRUE(isOk(singleNodeRings(sys, 3, &first)));
  EXPECT_EQ(r.graph.maxChannels, first.graph.maxChannels);
  EXPECT_FLOAT_EQ(r.graph.bwPerChannel, first.graph.bwPerChannel);
}

TEST(GpuModelRings, RefusesAGpuTheTopologyLacksOrOneGivenTwice) {
  const TopoSystem sys = dgxH100();
  SingleNodeRings r;
  EXPECT_EQ(ringsOverBusIds(sys, {busIdOf("0000:18:00.0"), busIdOf("0000:99:00.0")}, &r), Status::kInvalidArgument);
  EXPECT_NE(threadLastError().find("0000:99:00.0 is not in the topology"), std::string::npos) << threadLastError();
  EXPECT_EQ(ringsOverBusIds(sys, {busIdOf("0000:18:00.0"), busIdOf("0000:18:00.0")}, &r), Status::kInvalidArgument);
  EXPECT_NE(threadLastError().find("given twice"), std::string::npos) << threadLastError();
  EXPECT_EQ(ringsOverBusIds(sys, {busIdOf("0000:18:00.0")}, &r), Status::kInvalidArgument);
}

RingGraph h100Graph(int gpus) {
  const TopoSystem sys = dgxH100();
  SingleNodeRings r;
  EXPECT_TRUE(isOk(singleNodeRings(sys, gpus, &r))) << threadLastError();
  return r.graph;
}

Protocol protocolOf(ModelProto p) { return p == ModelProto::kLL ? Protocol::kLL : Protocol::kSimple; }

TEST(GpuModelPlan, TakesTheCostModelsChoiceWithoutLl128) {
  const RingGraph g = h100Graph(8);
  for (CollKind kind : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kBroadcast}) {
    for (size_t bytes = 8; bytes <= (size_t{1} << 30); bytes *= 4) {
      ModelChoiceLimits limits;
      limits.allowLl128 = false;
      const ModelChoice want = chooseByModel(g, kind, bytes, limits);
      const CollPlan p = planGpuCollective(TunerConfig{}, kind, bytes, 8, 32, false, &g);
      EXPECT_EQ(p.algo, want.algo) << bytes;
      EXPECT_EQ(p.proto, protocolOf(want.proto)) << bytes;
      EXPECT_EQ(p.nChannels, want.channels) << bytes;
    }
  }
  // What the model says on this node: LL on few channels for 8 B, Simple on many for 1 GiB.
  const CollPlan small = planGpuCollective(TunerConfig{}, CollKind::kAllReduce, 8, 8, 32, false, &g);
  const CollPlan large = planGpuCollective(TunerConfig{}, CollKind::kAllReduce, size_t{1} << 30, 8, 32, false, &g);
  EXPECT_EQ(small.proto, Protocol::kLL);
  EXPECT_EQ(large.proto, Protocol::kSimple);
  EXPECT_GT(large.nChannels, small.nChannels);
  EXPECT_EQ(large.nChannels, g.maxChannels);
}

TEST(GpuModelPlan, KeepsWithinTheConnectedChannelsAndWhatIsForced) {
  const RingGraph g = h100Graph(8);
  const size_t big = size_t{1} << 30;
  EXPECT_EQ(planGpuCollective(TunerConfig{}, CollKind::kAllReduce, big, 8, 4, false, &g).nChannels, 4);
  TunerConfig ll;
  ll.forcedProto = static_cast<int>(Protocol::kLL);
  EXPECT_EQ(planGpuCollective(ll, CollKind::kAllReduce, big, 8, 32, false, &g).proto, Protocol::kLL);
  TunerConfig simple;
  simple.forcedProto = static_cast<int>(Protocol::kSimple);
  EXPECT_EQ(planGpuCollective(simple, CollKind::kAllReduce, 8, 8, 32, false, &g).proto, Protocol::kSimple);
  TunerConfig tree;
  tree.forcedAlgo = static_cast<int>(Algorithm::kTree);
  EXPECT_EQ(planGpuCollective(tree, CollKind::kAllReduce, 8, 8, 32, false, &g).algo, Algorithm::kTree);
  EXPECT_EQ(planGpuCollective(tree, CollKind::kAllGather, 8, 8, 32, false, &g).algo, Algorithm::kRing);
  TunerConfig oneShot;
  oneShot.forcedAlgo = static_cast<int>(Algorithm::kOneShot);
  EXPECT_EQ(planGpuCollective(oneShot, CollKind::kAllReduce, big, 8, 32, false, &g).algo, Algorithm::kOneShot);
  // Two ranks, small: one-shot, which the model does not price.
  const RingGraph two = h100Graph(2);
  EXPECT_EQ(planGpuCollective(TunerConfig{}, CollKind::kAllReduce, 1024, 2, 32, false, &two).algo, Algorithm::kOneShot);
  EXPECT_EQ(planGpuCollective(TunerConfig{}, CollKind::kAllReduce, size_t{1} << 20, 2, 32, false, &two).algo,
            Algorithm::kRing);
}

// Direct on a GPU communicator: only when forced, and only where its ranks read each other's
// buffers (every rank on one device, core/init.cc); forced elsewhere, or for a collective without
// Direct, the planner's own choice. Never the default.
TEST(GpuModelPlan, DirectOnlyWhenForcedWhereTheRanksReachEachOther) {
  constexpr auto kIn = DirectReach::kInProcess, kNone = DirectReach::kNone;
  TunerConfig direct;
  direct.forcedAlgo = static_cast<int>(Algorithm::kDirect);
  for (CollKind k : {CollKind::kAllGather, CollKind::kBroadcast, CollKind::kReduceScatter, CollKind::kAllReduce}) {
    for (size_t bytes : {size_t{0}, size_t{8}, size_t{1} << 30}) {
      const CollPlan p = planGpuCollective(direct, k, bytes, 4, 32, true, nullptr, kIn);
      EXPECT_EQ(p.algo, Algorithm::kDirect) << collName(k) << " " << bytes;
      EXPECT_EQ(p.proto, Protocol::kSimple);
      EXPECT_EQ(p.nChannels, 1);
      EXPECT_EQ(planGpuCollective(direct, k, bytes, 2, 32, true, nullptr, kIn).algo, Algorithm::kDirect);
      EXPECT_NE(planGpuCollective(direct, k, bytes, 4, 32, true, nullptr, kNone).algo, Algorithm::kDirect);
      EXPECT_NE(planGpuCollective(TunerConfig{}, k, bytes, 4, 32, true, nullptr, kIn).algo, Algorithm::kDirect);
    }
  }
  EXPECT_EQ(planGpuCollective(direct, CollKind::kReduce, 8, 4, 32, true, nullptr, kIn).algo, Algorithm::kRing);
  EXPECT_EQ(planGpuCollective(direct, CollKind::kAllReduce, 8, 1, 32, true, nullptr, kIn).algo, Algorithm::kRing);
}

// The kernels that talk to every peer (Direct, the one-shot beyond two ranks) take at most
// kGpuMaxPeerRanks ranks: forced on more, the planner's own choice, not a launch the executor
// refuses (which would break the communicator).
TEST(GpuModelPlan, PerPeerKernelsOnlyWithinTheirTable) {
  TunerConfig direct, oneShot;
  direct.forcedAlgo = static_cast<int>(Algorithm::kDirect);
  oneShot.forcedAlgo = static_cast<int>(Algorithm::kOneShot);
  const int most = kGpuMaxPeerRanks, tooMany = kGpuMaxPeerRanks + 1;
  EXPECT_EQ(planGpuCollective(direct, CollKind::kAllReduce, 8, most, 32, true, nullptr, DirectReach::kInProcess).algo,
            Algorithm::kDirect);
  EXPECT_EQ(
      planGpuCollective(direct, CollKind::kAllReduce, 8, tooMany, 32, true, nullptr, DirectReach::kInProcess).algo,
      Algorithm::kRing);
  EXPECT_EQ(planGpuCollective(oneShot, CollKind::kAllReduce, 8, most, 32, true, nullptr).algo, Algorithm::kOneShot);
  EXPECT_EQ(planGpuCollective(oneShot, CollKind::kAllReduce, 8, tooMany, 32, true, nullptr).algo, Algorithm::kRing);
}

// What ccGroupSimulateEnd prices on a GPU communicator: the two-rank one-shot as a two-rank
// Broadcast (one hop, the whole input); Direct and the one-shot on more ranks not at all.
TEST(GpuModelPlan, TheOneShotIsPricedAsOneHopAndDirectNotAtAll) {
  const RingGraph two = h100Graph(2);
  const size_t bytes = size_t{1} << 16;
  const CostBreakdown oneShot = modelCost(two, Algorithm::kOneShot, CollKind::kAllReduce, bytes, ModelProto::kLL, 1);
  const CostBreakdown bcast = ringCost(two, CollKind::kBroadcast, bytes, ModelProto::kLL, 1);
  EXPECT_TRUE(oneShot.applies);
  EXPECT_DOUBLE_EQ(oneShot.timeUs, bcast.timeUs);
  EXPECT_LT(oneShot.timeUs, ringCost(two, CollKind::kAllReduce, bytes, ModelProto::kLL, 1).timeUs);
  EXPECT_FALSE(modelCost(h100Graph(4), Algorithm::kOneShot, CollKind::kAllReduce, bytes, ModelProto::kLL, 1).applies);
  EXPECT_FALSE(modelCost(two, Algorithm::kDirect, CollKind::kAllGather, bytes, ModelProto::kSimple, 1).applies);
}

TEST(GpuModelPlan, RanksSharingADeviceKeepTheirMeasuredChoices) {
  const RingGraph g = h100Graph(4);
  for (size_t bytes = 8; bytes <= (size_t{1} << 26); bytes *= 16) {
    const CollPlan with = planGpuCollective(TunerConfig{}, CollKind::kAllReduce, bytes, 4, 32, true, &g);
    const CollPlan without = planGpuCollective(TunerConfig{}, CollKind::kAllReduce, bytes, 4, 32, true);
    EXPECT_EQ(with.algo, without.algo) << bytes;
    EXPECT_EQ(with.proto, without.proto) << bytes;
    EXPECT_EQ(with.nChannels, without.nChannels) << bytes;
  }
}

}  // namespace
}  // namespace collcomm::detail
