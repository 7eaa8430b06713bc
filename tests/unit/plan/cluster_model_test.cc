// The cost model across nodes and with trees (plan/cost_model.h) and the rings of several nodes
// (plan/ring_channels.h clusterRings): rail-aware channels from the NICs of the fixtures, NCCL's
// network latency terms, the tree's log2 latency, and the argmin between Ring and Tree.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "plan/cost_model.h"
#include "plan/ring_channels.h"
#include "topo/paths.h"
#include "topo/topo.h"

namespace collcomm::detail {
namespace {

std::string fixture(const char* name) {
  return std::string(COLLCOMM_SOURCE_DIR) + "/tests/fixtures/topologies/" + name;
}

ClusterRings clusterOf(const char* name, int gpus, int nodes) {
  TopoSystem sys;
  EXPECT_TRUE(isOk(loadTopologyFile(fixture(name), &sys))) << threadLastError();
  ClusterRings r;
  EXPECT_TRUE(isOk(clusterRings(sys, gpus, nodes, &r))) << threadLastError();
  return r;
}

TEST(ClusterRings, DgxA100NodesGetOneChannelPerHdrNicAtTwentyFour) {
  // 8 NICs of 200 Gb/s (25 GB/s) behind PCIe Gen4 (24 GB/s): NCCL's inter-node table gives 24 GB/s a
  // channel, one per NIC: 8 x 24 = 192 GB/s, the cluster's published busbw.
  const ClusterRings r = clusterOf("dgx_a100.xml", 8, 4);
  EXPECT_EQ(r.graph.nRanks, 32);
  EXPECT_EQ(r.graph.nNodes, 4);
  EXPECT_EQ(r.graph.maxChannels, 8);
  EXPECT_FLOAT_EQ(r.graph.bwPerChannel, 24.0f);
  EXPECT_FLOAT_EQ(r.nicBw, 25.0f);
  EXPECT_TRUE(r.graph.amdCpu);
  // Rail-aware: every channel on its own NIC, entering at a GPU on the NIC's PCIe switch and
  // visiting every GPU of the node once.
  std::set<int> nets;
  for (const RailSegment& s : r.segments) {
    nets.insert(s.net);
    ASSERT_EQ(s.gpus.size(), 8u);
    EXPECT_EQ(std::set<int>(s.gpus.begin(), s.gpus.end()).size(), 8u);
    EXPECT_EQ(s.gpus.front() / 2, s.net / 2) << "NIC " << s.net << " enters at GPU " << s.gpus.front();
  }
  EXPECT_EQ(nets.size(), 8u);
  // The entries differ: two NICs on one switch enter at its two GPUs.
  std::set<int> entries;
  for (const RailSegment& s : r.segments) entries.insert(s.gpus.front());
  EXPECT_EQ(entries.size(), 8u);
}

TEST(ClusterRings, FourNicHgxA100GetsFourChannels) {
  const ClusterRings r = clusterOf("hgx_a100_4nic.xml", 8, 2);
  EXPECT_EQ(r.graph.maxChannels, 4);
  EXPECT_FLOAT_EQ(r.graph.bwPerChannel, 24.0f);
}

TEST(ClusterRings, DgxH100NicsAreCappedByTheGpusNvlinks) {
  // 8 x 400G (50 GB/s) behind PCIe Gen5 (48): 8 channels of 48 would need 384 GB/s of each GPU's
  // 370.8 of NVLink, so 8 of 45 (360) is the most in all.
  const ClusterRings r = clusterOf("dgx_h100.xml", 8, 2);
  EXPECT_EQ(r.graph.maxChannels, 8);
  EXPECT_FLOAT_EQ(r.graph.bwPerChannel, 45.0f);
  EXPECT_FALSE(r.graph.amdCpu);
}

TEST(ClusterRings, OneNodeIsTheSingleNodeRings) {
  const ClusterRings r = clusterOf("dgx_a100.xml", 8, 1);
  EXPECT_EQ(r.graph.maxChannels, 12);
  EXPECT_TRUE(r.segments.empty());
}

TEST(ClusterRings, PartOfANodeUsesOnlyTheNicsNearItsGpus) {
  // GPUs 0 and 1 share a PCIe switch pair with mlx5_0 and mlx5_1 only.
  const ClusterRings r = clusterOf("dgx_a100.xml", 2, 3);
  std::set<int> nets;
  for (const RailSegment& s : r.segments) nets.insert(s.net);
  EXPECT_EQ(nets, (std::set<int>{0, 1}));
  EXPECT_EQ(r.graph.maxChannels, 2);
}

TEST(ClusterRings, ANodeWithoutNicsCannotBeJoined) {
  TopoSystem bare;
  bare.source = "a made-up node without NICs";
  const NodeRef cpu = bare.addNode(NodeType::kCpu, 0);
  for (int i = 0; i < 2; ++i) {
    const NodeRef g = bare.addNode(NodeType::kGpu, 0x1000 * (i + 1));
    bare.node(g).gpu.sm = 80;
    bare.connect(g, cpu, LinkType::kPci, 24.0f);
  }
  computePaths(&bare, PathOptions{});
  ClusterRings r;
  EXPECT_EQ(clusterRings(bare, 2, 2, &r), Status::kInvalidArgument);
  EXPECT_NE(threadLastError().find("no NIC"), std::string::npos) << threadLastError();
  EXPECT_TRUE(isOk(clusterRings(bare, 2, 1, &r))) << threadLastError();
}

TEST(ClusterModel, RingLatencyChargesTheNetworkOncePerNodeAndRound) {
  const RingGraph g = clusterOf("dgx_a100.xml", 8, 4).graph;
  // LL on 32 ranks over 4 nodes: 62 steps, 6 of them across the network at NCCL's 2.7 us, the
  // others at NVLink's 0.6 raised to the AMD network post overhead of 2 us.
  const CostBreakdown ll = ringCost(g, CollKind::kAllReduce, 4096, ModelProto::kLL, 8);
  EXPECT_NEAR(ll.latencyUs, 6.6 + 56 * 2.0 + 6 * 2.7, 1e-9);
  // LL is capped by the multi-node AMD table (19 GB/s on more than two nodes).
  EXPECT_NEAR(ll.busBw, 19.0, 1e-9);
  // Simple: overhead 3 x 2 us, network 14 us, and NCCL's 1.4 plateau once pieces reach 64 B.
  const CostBreakdown simple = ringCost(g, CollKind::kAllReduce, size_t{1} << 30, ModelProto::kSimple, 8);
  EXPECT_NEAR(simple.latencyUs, 1.4 * (8.4 + 56 * 6.0 + 6 * 14.0), 1e-9);
  EXPECT_NEAR(simple.busBw, 192.0, 1e-9);
}

TEST(ClusterModel, TreeLatencyGrowsWithLog2OfTheNodes) {
  // Simple tree on 8 GPUs a node: 8.4 base + 2 x (7 x 4.0 + floor(log2 nodes) x 14).
  RingGraph g = clusterOf("dgx_h100.xml", 8, 2).graph;
  for (int nodes : {2, 4, 16, 1024, 12500}) {
    g.nNodes = nodes;
    g.nRanks = 8 * nodes;
    const CostBreakdown t = treeCost(g, CollKind::kAllReduce, 8, ModelProto::kSimple, 8);
    EXPECT_NEAR(t.latencyUs, 8.4 + 2 * (7 * 4.0 + std::floor(std::log2(nodes)) * 14.0), 1e-9) << nodes;
  }
  // The tree's bandwidth: 0.92 of the channels, capped per channel (Hopper, more than 2 nodes: 36).
  const CostBreakdown big = treeCost(g, CollKind::kAllReduce, size_t{1} << 34, ModelProto::kSimple, 8);
  EXPECT_NEAR(big.busBw, 8 * 36.0, 1e-9);
  EXPECT_NEAR(big.wireUs, static_cast<double>(size_t{1} << 34) / (8 * 36.0 * 0.5 * 1e3), 1e-6);
}

TEST(ClusterModel, TimeGrowsWithSizeForBothAlgorithmsOnOneNodeAndMany) {
  for (int nodes : {1, 4, 12500}) {
    const RingGraph g = clusterOf("dgx_h100.xml", 8, nodes).graph;
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree})
      for (int p = 0; p < kModelProtoCount; ++p) {
        double last = 0;
        for (size_t b = 8; b <= (size_t{1} << 34); b *= 4) {
          const double t = modelCost(g, algo, CollKind::kAllReduce, b, static_cast<ModelProto>(p), 8).timeUs;
          EXPECT_GT(t, last) << nodes << " nodes, algo " << static_cast<int>(algo) << ", proto " << p << ", " << b;
          last = t;
        }
      }
  }
}

TEST(ClusterModel, TreesApplyToAllReduceOnly) {
  const RingGraph g = clusterOf("dgx_a100.xml", 8, 4).graph;
  EXPECT_FALSE(treeCost(g, CollKind::kAllGather, 1 << 20, ModelProto::kSimple, 8).applies);
  EXPECT_FALSE(modelHasAlgo(Algorithm::kTree, CollKind::kBroadcast));
  ModelChoiceLimits tree;
  tree.algo = static_cast<int>(Algorithm::kTree);
  EXPECT_EQ(chooseByModel(g, CollKind::kAllReduce, 1 << 20, tree).algo, Algorithm::kTree);
  const ModelChoice none = chooseByModel(g, CollKind::kBroadcast, 1 << 20, tree);
  EXPECT_FALSE(none.cost.applies);
  EXPECT_TRUE(std::isinf(none.cost.timeUs));
  // The argmin never picks a tree for a collective it does not run.
  for (size_t b = 8; b <= (size_t{1} << 34); b *= 16)
    EXPECT_EQ(chooseByModel(g, CollKind::kAllGather, b).algo, Algorithm::kRing) << b;
}

TEST(ClusterModel, ArgminPicksTreesAtScaleAndRingsForLargeMessagesOnFewNodes) {
  // 12,500 DGX H100 nodes: a ring's 200,000 steps cost ~1 s of latency; the tree wins at every size.
  RingGraph big = clusterOf("dgx_h100.xml", 8, 12500).graph;
  EXPECT_EQ(big.nRanks, 100000);
  for (size_t b = 8; b <= (size_t{16} << 30); b *= 8)
    EXPECT_EQ(chooseByModel(big, CollKind::kAllReduce, b).algo, Algorithm::kTree) << b;
  // 4 DGX A100 nodes at 4 GiB: the ring's 192 GB/s beats the tree's capped 8 x 17.8.
  const RingGraph a = clusterOf("dgx_a100.xml", 8, 4).graph;
  EXPECT_EQ(chooseByModel(a, CollKind::kAllReduce, size_t{4} << 30).algo, Algorithm::kRing);
  // And the argmin is no worse than any forced choice.
  for (size_t b : {size_t{8}, size_t{1} << 20, size_t{64} << 20, size_t{1} << 32})
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree})
      for (int p = 0; p < kModelProtoCount; ++p)
        for (int ch = 1; ch <= a.maxChannels; ++ch)
          EXPECT_LE(chooseByModel(a, CollKind::kAllReduce, b).cost.timeUs,
                    modelCost(a, algo, CollKind::kAllReduce, b, static_cast<ModelProto>(p), ch).timeUs + 1e-9);
}

TEST(ClusterModel, OneNodePredictionsAreUnchangedByTheMultiNodeTerms) {
  // The single-node rows of the published table rest on these: no network term on one node.
  const RingGraph g = clusterOf("dgx_a100.xml", 8, 1).graph;
  const CostBreakdown c = ringCost(g, CollKind::kAllReduce, size_t{1} << 30, ModelProto::kSimple, 12);
  EXPECT_NEAR(c.latencyUs, 8.4 + 14 * 3.4, 1e-9);
}

}  // namespace
}  // namespace collcomm::detail
