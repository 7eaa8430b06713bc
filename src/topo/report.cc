// Text and JSON renderings of a TopoSystem (tree, path matrices, nearest NICs).
#include "topo/report.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

namespace collcomm::detail {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  return buf;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt("\\u%04x", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string describe(const TopoSystem& sys, NodeRef r) {
  const TopoNode& n = sys.node(r);
  switch (r.type) {
    case NodeType::kCpu: {
      std::string s = fmt("CPU numa %d", n.cpu.numaId);
      if (!n.cpu.arch.empty()) s += "  " + n.cpu.arch;
      if (!n.cpu.vendor.empty()) s += " " + n.cpu.vendor;
      if (n.cpu.familyId >= 0) s += fmt(" family %d model %d", n.cpu.familyId, n.cpu.modelId);
      if (!n.cpu.affinity.empty()) s += "  affinity " + n.cpu.affinity;
      return s;
    }
    case NodeType::kGpu: {
      std::string s = fmt("GPU %d  %s", r.index, busIdToString(n.id).c_str());
      s += n.gpu.sm > 0 ? fmt("  sm %d", n.gpu.sm) : std::string("  sm ?");
      if (n.gpu.memMiB > 0) s += fmt("  %" PRId64 " MiB", n.gpu.memMiB);
      if (n.gpu.gdr) s += "  gdr";
      return s;
    }
    case NodeType::kPci:
      return fmt("PCI %s  class 0x%06x", busIdToString(n.id).c_str(), n.pci.classCode);
    case NodeType::kNic:
      return n.id >= 0 ? fmt("NIC %s", busIdToString(n.id).c_str()) : std::string("NIC (no PCI position)");
    case NodeType::kNet: {
      std::string s = fmt("NET %d %s port %d", r.index, n.net.name.c_str(), n.net.port);
      s += n.net.speedMbps > 0 ? fmt("  %d Mb/s", n.net.speedMbps) : std::string("  speed ?");
      if (n.net.gdr) s += "  gdr";
      return s;
    }
    case NodeType::kNvs:
      return fmt("NVS %d", r.index);
    default:
      return "?";
  }
}

// A link target named without its attributes (for NVLink/C2C/SYS links back into the tree).
std::string shortName(const TopoSystem& sys, NodeRef r) {
  const TopoNode& n = sys.node(r);
  if (r.type == NodeType::kCpu) return fmt("CPU numa %d", n.cpu.numaId);
  if (r.type == NodeType::kGpu) return fmt("GPU %d  %s", r.index, busIdToString(n.id).c_str());
  return describe(sys, r);
}

void printBranch(const TopoSystem& sys, NodeRef r, NodeRef parent, int depth, std::vector<std::vector<bool>>* seen,
                 std::string* out) {
  (*seen)[static_cast<int>(r.type)][r.index] = true;
  const TopoNode& n = sys.node(r);
  for (const TopoLink& l : n.links) {
    if (l.remote == parent && (l.type == LinkType::kPci || l.type == LinkType::kNet)) continue;
    std::string indent(static_cast<size_t>(depth + 1) * 2, ' ');
    bool tree = l.type == LinkType::kPci || l.type == LinkType::kNet;
    if (tree && !(*seen)[static_cast<int>(l.remote.type)][l.remote.index]) {
      *out += indent + fmt("%s %.1f GB/s -> ", linkTypeName(l.type), l.bw) + describe(sys, l.remote) + "\n";
      printBranch(sys, l.remote, r, depth + 1, seen, out);
    } else if (!tree && r.type == NodeType::kGpu) {
      *out += indent + fmt("%s %.1f GB/s -> ", linkTypeName(l.type), l.bw) + shortName(sys, l.remote) + "\n";
    } else if (l.type == LinkType::kSys) {
      *out += indent + fmt("SYS %.1f GB/s -> CPU numa %d\n", l.bw, sys.node(l.remote).cpu.numaId);
    }
  }
}

std::string pathCell(const TopoPath& p) {
  if (p.type == PathType::kDis) return "DIS";
  return fmt("%s/%.1f%s", pathTypeName(p.type), p.bw, p.bounceCpu >= 0 ? "*" : "");
}

}  // namespace

int numaOf(const TopoSystem& sys, NodeType type, int index) {
  int c = localCpu(sys, type, index);
  return c < 0 ? -1 : sys.nodes(NodeType::kCpu)[c].cpu.numaId;
}

std::string formatTopoTree(const TopoSystem& sys) {
  std::string out = fmt("System (%s): %d CPU(s), %d GPU(s), %d NIC port(s), %d PCI switch(es), %d NVSwitch fabric(s)\n",
                        sys.source.c_str(), sys.count(NodeType::kCpu), sys.count(NodeType::kGpu), sys.count(NodeType::kNet),
                        sys.count(NodeType::kPci), sys.count(NodeType::kNvs));
  std::vector<std::vector<bool>> seen(kNodeTypeCount);
  for (int t = 0; t < kNodeTypeCount; ++t) seen[t].assign(sys.nodes(static_cast<NodeType>(t)).size(), false);
  for (int c = 0; c < sys.count(NodeType::kCpu); ++c) {
    NodeRef r{NodeType::kCpu, c};
    out += describe(sys, r) + "\n";
    printBranch(sys, r, NodeRef{NodeType::kCpu, -1}, 0, &seen, &out);
  }
  return out;
}

std::string formatTopoMatrices(const TopoSystem& sys) {
  const int nG = sys.count(NodeType::kGpu), nN = sys.count(NodeType::kNet);
  std::string out;
  if (nG == 0) return "No GPU: no GPU paths.\n";
  const int w = 13;
  out += "GPU x GPU paths (type/GB/s; * = staged through a CPU, no P2P)\n";
  out += fmt("%-*s", 8, "");
  for (int j = 0; j < nG; ++j) out += fmt("%-*s", w, fmt("GPU%d", j).c_str());
  out += "\n";
  for (int i = 0; i < nG; ++i) {
    out += fmt("%-*s", 8, fmt("GPU%d", i).c_str());
    for (int j = 0; j < nG; ++j) out += fmt("%-*s", w, pathCell(sys.path(NodeType::kGpu, i, NodeType::kGpu, j)).c_str());
    out += "\n";
  }
  if (nN == 0) return out + "No NIC: no GPU-NIC paths.\n";
  out += "\nGPU x NIC paths (type/GB/s; * = staged through a CPU, no GPUDirect RDMA)\n";
  out += fmt("%-*s", 8, "");
  for (int n = 0; n < nN; ++n) out += fmt("%-*s", w, sys.nodes(NodeType::kNet)[n].net.name.substr(0, w - 1).c_str());
  out += "\n";
  for (int i = 0; i < nG; ++i) {
    out += fmt("%-*s", 8, fmt("GPU%d", i).c_str());
    for (int n = 0; n < nN; ++n) out += fmt("%-*s", w, pathCell(sys.path(NodeType::kGpu, i, NodeType::kNet, n)).c_str());
    out += "\n";
  }
  out += "\nNearest NIC per GPU\n";
  for (int i = 0; i < nG; ++i) {
    int pick = preferredNet(sys, i);
    if (pick < 0) {
      out += fmt("GPU%d -> none\n", i);
      continue;
    }
    const TopoPath& p = sys.path(NodeType::kGpu, i, NodeType::kNet, pick);
    out += fmt("GPU%d -> %s (%s, %.1f GB/s", i, sys.nodes(NodeType::kNet)[pick].net.name.c_str(), pathTypeName(p.type), p.bw);
    std::vector<int> all = nearestNets(sys, i);
    if (all.size() > 1) {
      out += "; equally near:";
      for (int n : all) out += " " + sys.nodes(NodeType::kNet)[n].net.name;
    }
    out += ")\n";
  }
  return out;
}

std::string formatTopoJson(const TopoSystem& sys) {
  const int nG = sys.count(NodeType::kGpu), nN = sys.count(NodeType::kNet), nC = sys.count(NodeType::kCpu);
  std::string o = "{";
  o += "\"source\":" + jsonString(sys.source);
  o += ",\"gpus\":[";
  for (int g = 0; g < nG; ++g) {
    const TopoNode& n = sys.nodes(NodeType::kGpu)[g];
    o += fmt("%s{\"index\":%d,\"busid\":%s,\"sm\":%d,\"numa\":%d}", g ? "," : "", g, jsonString(busIdToString(n.id)).c_str(),
             n.gpu.sm, numaOf(sys, NodeType::kGpu, g));
  }
  o += "],\"nics\":[";
  for (int i = 0; i < nN; ++i) {
    const TopoNode& n = sys.nodes(NodeType::kNet)[i];
    int64_t nicId = n.net.nic >= 0 ? sys.nodes(NodeType::kNic)[n.net.nic].id : -1;
    std::string bus = nicId >= 0 ? jsonString(busIdToString(nicId)) : std::string("null");
    o += fmt("%s{\"index\":%d,\"name\":%s,\"busid\":%s,\"speed_mbps\":%d,\"numa\":%d}", i ? "," : "", i,
             jsonString(n.net.name).c_str(), bus.c_str(), n.net.speedMbps, numaOf(sys, NodeType::kNet, i));
  }
  o += "],\"cpus\":[";
  for (int c = 0; c < nC; ++c) {
    const TopoNode& n = sys.nodes(NodeType::kCpu)[c];
    o += fmt("%s{\"numa\":%d,\"arch\":%s,\"vendor\":%s}", c ? "," : "", n.cpu.numaId, jsonString(n.cpu.arch).c_str(),
             jsonString(n.cpu.vendor).c_str());
  }
  auto matrix = [&](NodeType to, int nTo) {
    std::string m = "[";
    for (int g = 0; g < nG; ++g) {
      m += g ? ",[" : "[";
      for (int j = 0; j < nTo; ++j) {
        const TopoPath& p = sys.path(NodeType::kGpu, g, to, j);
        m += fmt("%s{\"type\":\"%s\",\"bw_gbps\":%.1f}", j ? "," : "", pathTypeName(p.type), p.bw);
      }
      m += "]";
    }
    return m + "]";
  };
  o += "],\"paths\":{\"gpu_gpu\":" + matrix(NodeType::kGpu, nG) + ",\"gpu_nic\":" + matrix(NodeType::kNet, nN) + "}";
  o += ",\"nearest_nic\":[";
  for (int g = 0; g < nG; ++g) o += fmt("%s%d", g ? "," : "", preferredNet(sys, g));
  o += "]}\n";
  return o;
}

}  // namespace collcomm::detail
