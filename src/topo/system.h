// The machine as a graph: typed nodes (GPUs, PCI switches, NVSwitches, CPUs/NUMA domains, NICs and
// their network ports) joined by typed links with bandwidths, plus the paths computed over them
// (paths.h). Built from an NCCL-format XML tree (system_from_xml.cc); read-only afterwards.
// Setup tier: nothing here runs on the data path.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace collcomm::detail {

enum class NodeType : int { kGpu = 0, kPci, kNvs, kCpu, kNic, kNet, kCount };
inline constexpr int kNodeTypeCount = static_cast<int>(NodeType::kCount);
const char* nodeTypeName(NodeType t);

// Link types share numbering with PathType where they mean the same thing (NCCL's convention).
enum class LinkType : int { kLoc = 0, kNvl = 1, kC2c = 3, kPci = 4, kSys = 9, kNet = 10 };
const char* linkTypeName(LinkType t);

// Path types, best first. The numeric order is the "distance" compared against P2P/GDR levels.
enum class PathType : int {
  kLoc = 0,  // the node itself
  kNvl,      // NVLink, direct or through NVSwitches
  kNvb,      // NVLink through one intermediate GPU
  kC2c,      // chip-to-chip link between a GPU and its CPU (Grace Hopper)
  kPix,      // at most one PCIe switch
  kPxb,      // several PCIe switches, no host bridge
  kP2c,      // GPU to NIC: C2C to the CPU, then PCIe to the NIC
  kPxn,      // GPU to NIC through an NVLink peer GPU that is near the NIC
  kPhb,      // PCIe through a host bridge (the CPU)
  kSys,      // across the inter-socket link (QPI/UPI/xGMI)
  kNet,      // through the network
  kDis,      // not connected
};
inline constexpr int kPathTypeCount = static_cast<int>(PathType::kDis) + 1;
const char* pathTypeName(PathType t);
// "PXB" -> kPxb; also NCCL's old numeric levels "0".."5". False when unrecognised.
bool parsePathType(const std::string& s, PathType* out);

struct NodeRef {
  NodeType type = NodeType::kCpu;
  int index = -1;
  bool operator==(const NodeRef&) const = default;
};

struct TopoLink {
  LinkType type = LinkType::kLoc;
  float bw = 0;  // GB/s, one direction
  NodeRef remote;
};

struct CpuAttrs {
  int numaId = -1;
  std::string affinity;  // Linux cpumask text, e.g. "0000ffff,0000ffff"
  std::string arch;      // "x86_64", "arm64", "ppc64"
  std::string vendor;    // "GenuineIntel", "AuthenticAMD", ...
  int familyId = -1;
  int modelId = -1;
};

struct PciAttrs {
  uint32_t classCode = 0;  // 24-bit PCI class, e.g. 0x060400
  uint16_t vendor = 0, device = 0, subsystemVendor = 0, subsystemDevice = 0;
  float linkGts = 0;  // GT/s per lane; 0 when unknown
  int linkWidth = 0;  // lanes; 0 when unknown
};

struct GpuAttrs {
  int dev = -1;          // NVML/CUDA device ordinal; -1 when unknown
  int rank = -1;         // communicator rank on this GPU, when a dump recorded it
  int sm = 0;            // compute capability x10 (80 = 8.0); 0 when unknown
  int64_t memMiB = 0;    // device memory; 0 when unknown
  bool gdr = false;      // GPUDirect RDMA capable
};

struct NetAttrs {
  std::string name;      // "mlx5_0", "eth0"
  int dev = -1;          // net device index as a dump recorded it
  int port = 1;
  int speedMbps = 0;     // 0 when unknown
  uint64_t guid = 0;
  bool gdr = false;
  int maxConn = 0;
  bool coll = false;     // collective offload (CollNet/SHARP)
  float latencyUs = 0;
  int nic = -1;          // index of the NIC node this port belongs to
};

struct TopoNode {
  NodeType type = NodeType::kCpu;
  // Bus id for PCI-attached nodes (domain<<20 | bus<<12 | dev<<4 | fn; NICs drop fn), numaid for
  // CPUs, the ordinal for NVSwitches and NETs; -1 for a NIC attached straight to a CPU.
  int64_t id = -1;
  CpuAttrs cpu;
  PciAttrs pci;  // also filled for GPU and NIC nodes
  GpuAttrs gpu;
  NetAttrs net;
  std::vector<TopoLink> links;
};

struct TopoPath {
  PathType type = PathType::kDis;
  float bw = 0;       // bottleneck bandwidth, GB/s
  int hops = 0;       // links traversed
  int relayGpu = -1;  // PXN: the NVLink peer GPU the traffic goes through
  int bounceCpu = -1; // the CPU the traffic is staged through when P2P/GDR is not allowed
};

class TopoSystem {
 public:
  std::vector<TopoNode>& nodes(NodeType t) { return nodes_[static_cast<int>(t)]; }
  const std::vector<TopoNode>& nodes(NodeType t) const { return nodes_[static_cast<int>(t)]; }
  TopoNode& node(NodeRef r) { return nodes_[static_cast<int>(r.type)][r.index]; }
  const TopoNode& node(NodeRef r) const { return nodes_[static_cast<int>(r.type)][r.index]; }
  int count(NodeType t) const { return static_cast<int>(nodes(t).size()); }
  NodeRef addNode(NodeType t, int64_t id);
  // Index of the node of type t with this id, or -1.
  int find(NodeType t, int64_t id) const;
  // Adds bw to the a->b link of this type (creating it), and the same to b->a.
  void connect(NodeRef a, NodeRef b, LinkType type, float bw);

  // Paths between GPUs, NETs and CPUs (the only types paths are kept for). Valid after
  // computePaths(); indices are node indices in nodes(from) / nodes(to).
  const TopoPath& path(NodeType from, int i, NodeType to, int j) const;
  TopoPath& path(NodeType from, int i, NodeType to, int j);
  bool pathsComputed() const { return pathsComputed_; }
  void setPathsComputed() { pathsComputed_ = true; }
  void resetPaths();
  static bool keepsPaths(NodeType t) { return t == NodeType::kGpu || t == NodeType::kNet || t == NodeType::kCpu; }

  // Where the system came from ("detected", a file name, ...), for logs and cc-topo.
  std::string source;

 private:
  std::array<std::vector<TopoNode>, kNodeTypeCount> nodes_;
  // paths_[from][to][i * count(to) + j]
  std::array<std::array<std::vector<TopoPath>, kNodeTypeCount>, kNodeTypeCount> paths_;
  bool pathsComputed_ = false;
};

// Canonical "dddd:bb:dd.f" text of a bus id, and the reverse. Parsing accepts 4-8 hex digits of
// domain, and a missing domain ("17:00.0" means domain 0).
std::string busIdToString(int64_t busId);
bool parseBusId(const std::string& s, int64_t* out);

}  // namespace collcomm::detail
