// Topology files: load -> dump -> load gives the same system; malformed input gets an error with
// the line and what was expected; a file merges over detection; local detection never fails.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "topo/detect.h"
#include "topo/report.h"
#include "topo/xml_merge.h"
#include "topo_test_util.h"

namespace collcomm::detail {
namespace {

using testing::allFixtures;
using testing::fixturePath;

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Everything a planner can see of a system, as text: nodes with attributes, links, paths.
std::string fingerprint(const TopoSystem& sys) {
  std::ostringstream o;
  for (int t = 0; t < kNodeTypeCount; ++t) {
    for (const TopoNode& n : sys.nodes(static_cast<NodeType>(t))) {
      o << nodeTypeName(n.type) << ' ' << n.id << " cpu{" << n.cpu.numaId << ',' << n.cpu.affinity << ',' << n.cpu.arch
        << ',' << n.cpu.vendor << ',' << n.cpu.familyId << ',' << n.cpu.modelId << "} pci{" << n.pci.classCode << ','
        << n.pci.vendor << ',' << n.pci.device << ',' << n.pci.linkGts << ',' << n.pci.linkWidth << "} gpu{" << n.gpu.dev
        << ',' << n.gpu.rank << ',' << n.gpu.sm << ',' << n.gpu.memMiB << ',' << n.gpu.gdr << "} net{" << n.net.name << ','
        << n.net.dev << ',' << n.net.port << ',' << n.net.speedMbps << ',' << n.net.guid << ',' << n.net.gdr << ','
        << n.net.maxConn << ',' << n.net.nic << "} links:";
      for (const TopoLink& l : n.links)
        o << ' ' << linkTypeName(l.type) << '/' << l.bw << "->" << nodeTypeName(l.remote.type) << l.remote.index;
      o << '\n';
    }
  }
  const NodeType kinds[] = {NodeType::kGpu, NodeType::kNet, NodeType::kCpu};
  for (NodeType a : kinds)
    for (NodeType b : kinds)
      for (int i = 0; i < sys.count(a); ++i)
        for (int j = 0; j < sys.count(b); ++j) o << testing::cell(sys.path(a, i, b, j)) << ' ';
  return o.str();
}

Status buildFromText(const std::string& text, TopoSystem* sys) {
  XmlElement root;
  CC_CHECK(parseXml(text, "input.xml", &root));
  CC_CHECK(buildSystemFromXml(root, "input.xml", sys));
  computePaths(sys, PathOptions{});
  return kOk;
}

TEST(TopoFiles, LoadDumpLoadIsIdentity) {
  for (const std::string& name : allFixtures()) {
    SCOPED_TRACE(name);
    XmlElement first;
    ASSERT_EQ(readTopologyXml(fixturePath(name), &first), kOk) << threadLastError();
    TopoSystem a, b;
    ASSERT_EQ(buildSystemFromXml(first, name, &a), kOk);
    computePaths(&a, PathOptions{});
    const std::string dumped = serializeXml(first);
    ASSERT_EQ(buildFromText(dumped, &b), kOk) << threadLastError();
    EXPECT_EQ(fingerprint(a), fingerprint(b));
    // A dump of the dump is byte-identical.
    XmlElement second;
    ASSERT_EQ(parseXml(dumped, "dump", &second), kOk);
    EXPECT_EQ(serializeXml(second), dumped);
  }
}

TEST(TopoFiles, WriteAndReadBackThroughAFile) {
  XmlElement root;
  ASSERT_EQ(readTopologyXml(fixturePath("dgx_h100.xml"), &root), kOk);
  const std::string path = std::string(COLLCOMM_BINARY_DIR) + "/topo_roundtrip_test.xml";
  ASSERT_EQ(writeTopologyXml(path, root), kOk);
  TopoSystem a, b;
  ASSERT_EQ(loadTopologyFile(fixturePath("dgx_h100.xml"), &a), kOk);
  ASSERT_EQ(loadTopologyFile(path, &b), kOk);
  b.source = a.source;
  EXPECT_EQ(fingerprint(a), fingerprint(b));
  std::remove(path.c_str());
}

struct BadInput {
  const char* text;
  const char* expectInError;  // each '|'-separated piece must appear
};

TEST(TopoFiles, MalformedInputNamesLineAndExpectation) {
  const BadInput cases[] = {
      {"", "line"},
      {"<system version=\"1\">\n  <cpu numaid=\"0\">\n</system>\n", "line 3|not well-formed"},
      {"<system version=\"1\">\n<cpu>\n</cpu></system>", "line 2|numaid"},
      {"<system version=\"1\"><cpu numaid=\"zero\"/></system>", "numaid=\"zero\"|expected"},
      {"<system version=\"1\">\n<cpu numaid=\"0\"/>\n<cpu numaid=\"0\"/></system>", "line 3|numaid"},
      {"<system version=\"1\"><cpu numaid=\"0\">\n\n<pci class=\"0x060400\"/></cpu></system>", "line 3|busid"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"zz:00.0\" class=\"0x060400\"/></cpu></system>", "busid"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\"/></cpu></system>", "class"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"green\"/></cpu></system>",
       "class=\"green\"|24-bit"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\" link_width=\"wide\"/></cpu></system>",
       "link_width"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"big\"/></pci></cpu></system>",
       "sm=\"big\""},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"80\"><nvlink count=\"2\"/></gpu></pci></cpu></system>",
       "target"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu sm=\"80\"><nvlink target=\"0000:02:00.0\" count=\"-3\"/></gpu></pci></cpu></system>",
       "count"},
      {"<system version=\"1\"><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/></cpu></system>",
       "line 3|line 2"},
      {"<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x020700\"><nic><net name=\"x\" speed=\"fast\"/></nic></pci></cpu></system>",
       "speed"},
      {"<topology/>", "<topology>|<system"},
      {"<system version=\"one\"/>", "version"},
      {"<!DOCTYPE system [<!ENTITY a \"b\">]><system version=\"1\"/>", "DOCTYPE"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.text);
    TopoSystem sys;
    clearThreadLastError();
    EXPECT_EQ(buildFromText(c.text, &sys), Status::kInvalidArgument);
    std::string err = threadLastError();
    std::string want = c.expectInError;
    size_t start = 0;
    while (start <= want.size()) {
      size_t bar = want.find('|', start);
      std::string piece = want.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
      EXPECT_NE(err.find(piece), std::string::npos) << "error \"" << err << "\" lacks \"" << piece << "\"";
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
  }
}

TEST(TopoFiles, MissingFileIsAnError) {
  TopoSystem sys;
  EXPECT_EQ(loadTopologyFile("/nonexistent/topo.xml", &sys), Status::kInvalidArgument);
  EXPECT_NE(threadLastError().find("/nonexistent/topo.xml"), std::string::npos);
}

TEST(TopoFiles, MultiPortNicIsOneDeviceWithTwoPorts) {
  const char* xml = R"(<system version="1"><cpu numaid="0" arch="x86_64">
    <pci busid="0000:17:00.0" class="0x060400"><pci busid="0000:18:00.0" class="0x030200"><gpu sm="80" gdr="1"/></pci>
    <pci busid="0000:19:00.0" class="0x020700"><nic><net name="mlx5_0" dev="0" speed="100000" gdr="1"/></nic></pci>
    <pci busid="0000:19:00.1" class="0x020700"><nic><net name="mlx5_1" dev="1" speed="100000" gdr="1"/></nic></pci></pci>
  </cpu></system>)";
  TopoSystem sys;
  ASSERT_EQ(buildFromText(xml, &sys), kOk) << threadLastError();
  EXPECT_EQ(sys.count(NodeType::kNic), 1);
  EXPECT_EQ(sys.count(NodeType::kNet), 2);
  EXPECT_EQ(testing::row(sys, 0, NodeType::kNet), "PIX/12.0 PIX/12.0");
}

TEST(TopoFiles, FileMergesOverDetection) {
  // "Detected": a GPU with its attributes, directly under the CPU.
  XmlElement detected;
  ASSERT_EQ(parseXml(R"(<system version="1"><cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
      <pci busid="0001:00:00.0" class="0x030200" vendor="0x10de"><gpu dev="0" sm="80" gdr="1" mem="40960"/></pci>
      <pci busid="0000:c1:00.0" class="0x020000"><nic><net name="eth0" dev="0" speed="25000"/></nic></pci>
    </cpu></system>)",
                     "detected", &detected),
            kOk);
  XmlElement vendor;
  ASSERT_EQ(readTopologyXml(fixturePath("vendor_ndv4_partial.xml"), &vendor), kOk);
  mergeTopologyXml(&detected, vendor);
  TopoSystem sys;
  ASSERT_EQ(buildSystemFromXml(detected, "merged", &sys), kOk) << threadLastError();
  computePaths(&sys, PathOptions{});
  ASSERT_EQ(sys.count(NodeType::kGpu), 8);
  EXPECT_EQ(sys.nodes(NodeType::kGpu)[0].gpu.sm, 80);  // detection's attributes survive...
  EXPECT_EQ(testing::cell(sys.path(NodeType::kGpu, 0, NodeType::kGpu, 1)), "PIX/24.0");  // ...under the file's switch
  EXPECT_EQ(sys.count(NodeType::kNet), 9);  // eth0 kept, the 8 IB ports added
}

TEST(TopoDetect, LocalMachineDoesNotFail) {
  XmlElement root;
  ASSERT_EQ(detectLocalTopology(&root), kOk) << threadLastError();
  TopoSystem sys;
  ASSERT_EQ(systemFromXml(root, "detected", &sys), kOk) << threadLastError();
  EXPECT_GE(sys.count(NodeType::kCpu), 1);
  // Dump -> load of the detected machine is the same system.
  TopoSystem again;
  ASSERT_EQ(buildFromText(serializeXml(root), &again), kOk) << threadLastError();
  again.source = sys.source;
  computePaths(&sys, PathOptions{});
  EXPECT_EQ(fingerprint(sys), fingerprint(again));
  const std::string json = formatTopoJson(sys);
  EXPECT_NE(json.find("\"cpus\":[{\"numa\":"), std::string::npos) << json;
  EXPECT_FALSE(formatTopoTree(sys).empty());
}

TEST(TopoDetect, EnvironmentSelectsFileAndDump) {
  const std::string dump = std::string(COLLCOMM_BINARY_DIR) + "/topo_env_dump_test.xml";
  setenv("COLLCOMM_TOPO_FILE", fixturePath("pcie_4gpu_2socket.xml").c_str(), 1);
  setenv("COLLCOMM_TOPO_DUMP_FILE", dump.c_str(), 1);
  TopoSystem sys;
  ASSERT_EQ(getTopology(&sys), kOk) << threadLastError();
  EXPECT_EQ(sys.count(NodeType::kGpu), 4);
  TopoSystem back;
  ASSERT_EQ(loadTopologyFile(dump, &back), kOk);
  EXPECT_EQ(back.count(NodeType::kGpu), 4);
  setenv("COLLCOMM_P2P_LEVEL", "SYS", 1);
  ASSERT_EQ(getTopology(&sys), kOk);
  EXPECT_EQ(testing::cell(sys.path(NodeType::kGpu, 0, NodeType::kGpu, 2)), "SYS/10.0");
  unsetenv("COLLCOMM_P2P_LEVEL");
  unsetenv("COLLCOMM_TOPO_FILE");
  unsetenv("COLLCOMM_TOPO_DUMP_FILE");
  std::remove(dump.c_str());
}

TEST(TopoJson, ShapeForAFixture) {
  TopoSystem sys = testing::loadFixture("gh200_1gpu_1nic.xml");
  const std::string json = formatTopoJson(sys);
  EXPECT_NE(json.find("\"gpus\":[{\"index\":0,\"busid\":\"0009:01:00.0\",\"sm\":90,\"numa\":0}]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"nics\":[{\"index\":0,\"name\":\"mlx5_0\",\"busid\":\"0000:01:00.0\",\"speed_mbps\":400000,\"numa\":0}]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"cpus\":[{\"numa\":0,\"arch\":\"arm64\",\"vendor\":\"ARM\"}]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu_nic\":[[{\"type\":\"P2C\",\"bw_gbps\":48.0}]]"), std::string::npos) << json;
}

// Random mutations of the fixtures must never crash the parser or the builder (a deterministic
// stand-in for the libFuzzer target in tests/fuzz/, run on every CI build).
TEST(TopoFuzz, MutatedFixturesNeverCrash) {
  std::mt19937 rng(12345);
  std::vector<std::string> seeds;
  for (const std::string& name : allFixtures()) seeds.push_back(readFile(fixturePath(name)));
  const char* tokens[] = {"<", ">", "/>", "\"", "=", "<pci busid=\"0000:01:00.0\" class=\"0x030200\">", "<gpu sm=\"90\">",
                          "<nvlink target=\"0000:01:00.0\" count=\"99\"/>", "<nic><net/></nic>", "</pci>", "0x", "-1",
                          "99999999999999999999", "&amp;", "&#0;", "ffff:ff:ff.f", "<cpu numaid=\"7\">", "</cpu>",
                          "<c2c count=\"1\" bw=\"1\"/>"};
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0: s.erase(pos, 1 + rng() % 40); break;
        case 1: s.insert(pos, tokens[rng() % (sizeof(tokens) / sizeof(tokens[0]))]); break;
        case 2: s[pos] = static_cast<char>(rng() % 256); break;
        default: {
          size_t from = rng() % s.size();
          s.insert(pos, s.substr(from, rng() % 200));
        }
      }
    }
    TopoSystem sys;
    Status st = buildFromText(s, &sys);
    if (isOk(st)) {
      (void)formatTopoJson(sys);
      (void)formatTopoTree(sys);
      (void)formatTopoMatrices(sys);
    }
  }
}

}  // namespace
}  // namespace collcomm::detail
