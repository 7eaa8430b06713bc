// Each fixture machine's expected GPUxGPU and GPUxNIC path matrices and nearest-NIC map, derived
// from the hardware's public description (see the comments per machine).
#include <functional>

#include "topo_test_util.h"

namespace collcomm::detail {
namespace {

using testing::loadFixture;
using testing::row;

// Expected row built from a per-cell rule.
std::string expectRow(int n, const std::function<std::string(int)>& cellFor) {
  std::string out;
  for (int j = 0; j < n; ++j) {
    if (j) out += ' ';
    out += cellFor(j);
  }
  return out;
}

void expectNearest(const TopoSystem& sys, const std::vector<int>& expected) {
  ASSERT_EQ(sys.count(NodeType::kGpu), static_cast<int>(expected.size()));
  for (int g = 0; g < sys.count(NodeType::kGpu); ++g) EXPECT_EQ(preferredNet(sys, g), expected[g]) << "GPU " << g;
}

// DGX A100: 2 AMD Rome sockets, 8 A100 (12 NVLinks each into 6 NVSwitches, 20 GB/s per link), 8
// HDR NICs; per PCIe Gen4 switch complex two GPUs behind one leaf switch and two NICs behind
// another (PXB), NICs of other complexes reached through an NVLink peer (PXN).
TEST(TopoFixtures, DgxA100) {
  TopoSystem sys = loadFixture("dgx_a100.xml");
  ASSERT_EQ(sys.count(NodeType::kGpu), 8);
  ASSERT_EQ(sys.count(NodeType::kNet), 8);
  ASSERT_EQ(sys.count(NodeType::kCpu), 2);
  ASSERT_EQ(sys.count(NodeType::kNvs), 1);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(row(sys, g, NodeType::kGpu), expectRow(8, [&](int j) { return j == g ? "LOC/5000.0" : "NVL/240.0"; }));
    EXPECT_EQ(row(sys, g, NodeType::kNet), expectRow(8, [&](int n) { return n / 2 == g / 2 ? "PXB/24.0" : "PXN/24.0"; }));
    EXPECT_EQ(nearestNets(sys, g), (std::vector<int>{g / 2 * 2, g / 2 * 2 + 1}));
  }
  expectNearest(sys, {0, 1, 2, 3, 4, 5, 6, 7});
  const TopoPath& pxn = sys.path(NodeType::kGpu, 0, NodeType::kNet, 5);
  EXPECT_EQ(pxn.relayGpu / 2, 2);  // relayed by a GPU of NIC 5's complex
  PathOptions opts;
  EXPECT_TRUE(p2pAllowed(sys, 0, 7, opts));
  EXPECT_TRUE(gdrAllowed(sys, 0, 1, opts));
  EXPECT_TRUE(gdrAllowed(sys, 0, 5, opts));  // through the relay, which is PXB from the NIC
}

// DGX H100: 2 Sapphire Rapids sockets, 8 H100 with 18 NVLinks (20.6 GB/s each) into the NVSwitch
// fabric, one 400G NIC sharing each GPU's PCIe Gen5 switch (PIX).
TEST(TopoFixtures, DgxH100) {
  TopoSystem sys = loadFixture("dgx_h100.xml");
  ASSERT_EQ(sys.count(NodeType::kGpu), 8);
  ASSERT_EQ(sys.count(NodeType::kNet), 8);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(row(sys, g, NodeType::kGpu), expectRow(8, [&](int j) { return j == g ? "LOC/5000.0" : "NVL/370.8"; }));
    EXPECT_EQ(row(sys, g, NodeType::kNet), expectRow(8, [&](int n) { return n == g ? "PIX/48.0" : "PXN/48.0"; }));
  }
  expectNearest(sys, {0, 1, 2, 3, 4, 5, 6, 7});
}

// Dual-socket Cascade Lake box with 4 V100 PCIe: two GPUs and one EDR NIC behind a Gen3 PLX switch
// per socket; no NVLink. Cross-socket pairs are SYS (UPI 10 GB/s) and stage through a CPU.
TEST(TopoFixtures, Pcie4Gpu2Socket) {
  TopoSystem sys = loadFixture("pcie_4gpu_2socket.xml");
  const char* gg[4] = {"LOC/5000.0 PIX/12.0 SYS/10.0* SYS/10.0*", "PIX/12.0 LOC/5000.0 SYS/10.0* SYS/10.0*",
                       "SYS/10.0* SYS/10.0* LOC/5000.0 PIX/12.0", "SYS/10.0* SYS/10.0* PIX/12.0 LOC/5000.0"};
  const char* gn[4] = {"PIX/12.0 SYS/10.0*", "PIX/12.0 SYS/10.0*", "SYS/10.0* PIX/12.0", "SYS/10.0* PIX/12.0"};
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(row(sys, g, NodeType::kGpu), gg[g]);
    EXPECT_EQ(row(sys, g, NodeType::kNet), gn[g]);
  }
  expectNearest(sys, {0, 0, 1, 1});
  PathOptions opts;
  EXPECT_TRUE(p2pAllowed(sys, 0, 1, opts));
  EXPECT_FALSE(p2pAllowed(sys, 0, 2, opts));
  EXPECT_FALSE(gdrAllowed(sys, 0, 1, opts));
}

// Single-socket Zen 3 workstation, 4 RTX A6000 on their own root ports, NVLink bridges (4 links,
// 12 GB/s each) joining GPUs 0-1 and 2-3, one 100GbE NIC without GPUDirect.
TEST(TopoFixtures, NvlinkPairs) {
  TopoSystem sys = loadFixture("nvlink_pairs.xml");
  const char* gg[4] = {"LOC/5000.0 NVL/48.0 PHB/24.0* PHB/24.0*", "NVL/48.0 LOC/5000.0 PHB/24.0* PHB/24.0*",
                       "PHB/24.0* PHB/24.0* LOC/5000.0 NVL/48.0", "PHB/24.0* PHB/24.0* NVL/48.0 LOC/5000.0"};
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(row(sys, g, NodeType::kGpu), gg[g]);
    EXPECT_EQ(row(sys, g, NodeType::kNet), "PHB/12.5*");
  }
  expectNearest(sys, {0, 0, 0, 0});
}

// GH200: Grace (arm64) and one H100 joined by NVLink-C2C (10 x 45 GB/s), one 400G NIC on Grace's
// PCIe: the GPU reaches the NIC over C2C then PCIe (P2C), with GPUDirect RDMA.
TEST(TopoFixtures, Gh200OneGpuOneNic) {
  TopoSystem sys = loadFixture("gh200_1gpu_1nic.xml");
  ASSERT_EQ(sys.count(NodeType::kGpu), 1);
  EXPECT_EQ(row(sys, 0, NodeType::kGpu), "LOC/5000.0");
  EXPECT_EQ(row(sys, 0, NodeType::kNet), "P2C/48.0");
  EXPECT_EQ(row(sys, 0, NodeType::kCpu), "C2C/450.0");
  expectNearest(sys, {0});
  EXPECT_TRUE(gdrAllowed(sys, 0, 0, PathOptions{}));
  EXPECT_EQ(sys.nodes(NodeType::kGpu)[0].gpu.memMiB, 97871);
}

// An Azure-NDv4-style partial file: 4 NUMA nodes, each with a virtual switch holding 2 GPUs and 2
// InfiniBand NICs known only by class code. No NVLink information, NIC speed unknown (12 GB/s).
TEST(TopoFixtures, VendorPartial) {
  TopoSystem sys = loadFixture("vendor_ndv4_partial.xml");
  ASSERT_EQ(sys.count(NodeType::kGpu), 8);
  ASSERT_EQ(sys.count(NodeType::kNet), 8);
  ASSERT_EQ(sys.count(NodeType::kCpu), 4);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(row(sys, g, NodeType::kGpu),
              expectRow(8, [&](int j) { return j == g ? "LOC/5000.0" : j / 2 == g / 2 ? "PIX/24.0" : "SYS/16.0*"; }));
    EXPECT_EQ(row(sys, g, NodeType::kNet), expectRow(8, [&](int n) { return n / 2 == g / 2 ? "PIX/12.0" : "SYS/12.0*"; }));
    EXPECT_TRUE(sys.nodes(NodeType::kGpu)[g].gpu.gdr);
  }
  expectNearest(sys, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(sys.nodes(NodeType::kNet)[0].net.name, "0101:00:00.0");
  EXPECT_TRUE(sys.nodes(NodeType::kNet)[0].net.gdr);
}

TEST(TopoPaths, LevelsFromOptions) {
  PathOptions sysLevel;
  sysLevel.p2pLevel = PathType::kSys;
  sysLevel.gdrLevel = PathType::kSys;
  TopoSystem sys = loadFixture("pcie_4gpu_2socket.xml", sysLevel);
  EXPECT_EQ(row(sys, 0, NodeType::kGpu), "LOC/5000.0 PIX/12.0 SYS/10.0 SYS/10.0");
  EXPECT_EQ(row(sys, 0, NodeType::kNet), "PIX/12.0 SYS/10.0");

  PathOptions noPxn;
  noPxn.pxnDisable = true;
  TopoSystem h100 = loadFixture("dgx_h100.xml", noPxn);
  // Without PXN a same-socket NIC of another GPU is through the host bridge: no GPUDirect.
  EXPECT_EQ(testing::cell(h100.path(NodeType::kGpu, 0, NodeType::kNet, 1)), "PHB/48.0*");
  EXPECT_EQ(testing::cell(h100.path(NodeType::kGpu, 0, NodeType::kNet, 4)), "SYS/22.0*");

  PathOptions locP2p;
  locP2p.p2pLevel = PathType::kLoc;
  TopoSystem pairs = loadFixture("nvlink_pairs.xml", locP2p);
  EXPECT_EQ(testing::cell(pairs.path(NodeType::kGpu, 0, NodeType::kGpu, 1)), "PHB/24.0*");
}

TEST(TopoPaths, NvbThroughOneGpu) {
  // GPU 0 - GPU 1 - GPU 2 chained by NVLink; 0 and 2 are NVB apart unless NVB is disabled.
  const char* xml = R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="0" sm="70" gdr="1"><nvlink target="0000:02:00.0" count="2" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:02:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="1" sm="70" gdr="1"><nvlink target="0000:03:00.0" count="1" tclass="0x030200"/></gpu></pci>
    <pci busid="0000:03:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
      <gpu dev="2" sm="70" gdr="1"/></pci>
  </cpu>
</system>)";
  XmlElement root;
  ASSERT_EQ(parseXml(xml, "chain", &root), kOk);
  TopoSystem sys;
  ASSERT_EQ(buildSystemFromXml(root, "chain", &sys), kOk);
  PathOptions opts;
  computePaths(&sys, opts);
  EXPECT_EQ(testing::cell(sys.path(NodeType::kGpu, 0, NodeType::kGpu, 1)), "NVL/40.0");
  EXPECT_EQ(testing::cell(sys.path(NodeType::kGpu, 0, NodeType::kGpu, 2)), "NVB/20.0");
  opts.nvbDisable = true;
  computePaths(&sys, opts);
  EXPECT_EQ(testing::cell(sys.path(NodeType::kGpu, 0, NodeType::kGpu, 2)), "PHB/12.0*");
}

}  // namespace
}  // namespace collcomm::detail
