// Helpers shared by the topology tests: fixture paths, loading, matrices as compact text.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/status.h"
#include "topo/paths.h"
#include "topo/system.h"
#include "topo/system_from_xml.h"
#include "topo/topo.h"
#include "topo/xml_tree.h"

namespace collcomm::detail::testing {

inline std::string fixturePath(const std::string& name) {
  return std::string(COLLCOMM_SOURCE_DIR) + "/tests/fixtures/topologies/" + name;
}

inline const std::vector<std::string>& allFixtures() {
  static const std::vector<std::string> kNames = {"dgx_a100.xml",     "dgx_h100.xml",       "pcie_4gpu_2socket.xml",
                                                  "nvlink_pairs.xml", "gh200_1gpu_1nic.xml", "vendor_ndv4_partial.xml"};
  return kNames;
}

// Loads a fixture with default path options (whatever the environment says is cleared first).
inline TopoSystem loadFixture(const std::string& name, const PathOptions& opts = PathOptions{}) {
  XmlElement root;
  TopoSystem sys;
  EXPECT_EQ(readTopologyXml(fixturePath(name), &root), kOk) << threadLastError();
  EXPECT_EQ(buildSystemFromXml(root, name, &sys), kOk) << threadLastError();
  computePaths(&sys, opts);
  return sys;
}

// "TYPE/BW" with '*' when staged through a CPU, the same cell text cc-topo prints.
inline std::string cell(const TopoPath& p) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%s/%.1f%s", pathTypeName(p.type), p.bw, p.bounceCpu >= 0 ? "*" : "");
  return buf;
}

// Row i of the GPU x `to` matrix as space-separated cells.
inline std::string row(const TopoSystem& sys, int gpu, NodeType to) {
  std::string out;
  for (int j = 0; j < sys.count(to); ++j) {
    if (j) out += ' ';
    out += cell(sys.path(NodeType::kGpu, gpu, to, j));
  }
  return out;
}

}  // namespace collcomm::detail::testing
