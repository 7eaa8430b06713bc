// NCCL-format XML -> TopoSystem: which element becomes which node, the links and bandwidths they
// imply, and the error sentence for everything a file can get wrong.
#include "topo/system_from_xml.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <numeric>

#include "common/log.h"
#include "topo/bandwidth.h"

namespace collcomm::detail {
namespace {

constexpr uint32_t kClassBridgeMask = 0xffff00;
constexpr uint32_t kClassPciBridge = 0x060400;
constexpr uint32_t kClassNvSwitch = 0x068000;
constexpr uint32_t kClassCpuLink = 0x068001;  // NCCL's marker for an NVLink to the CPU
constexpr uint32_t kClassInfiniband = 0x020700;

struct PendingNvlink {
  int gpu;            // GPU index (pre-sort)
  std::string target;
  int count;
  uint32_t tclass;
  bool hasTclass;
  int line;
};

struct PendingC2c {
  int gpu;
  int count;
  int mbpsPerLink;  // MB/s
};

class Builder {
 public:
  Builder(const std::string& source, TopoSystem* sys) : source_(source), sys_(*sys) {}

  Status build(const XmlElement& root);

 private:
  Status fail(const XmlElement& e, const char* what) {
    return CC_ERROR(Status::kInvalidArgument, "%s line %d: <%s> %s", source_.c_str(), e.line, e.name.c_str(), what);
  }
  Status failAttr(const XmlElement& e, const char* key, const char* expected) {
    const std::string* v = e.attr(key);
    if (v == nullptr)
      return CC_ERROR(Status::kInvalidArgument, "%s line %d: <%s> needs a %s attribute (%s)", source_.c_str(), e.line,
                      e.name.c_str(), key, expected);
    return CC_ERROR(Status::kInvalidArgument, "%s line %d: <%s> %s=\"%s\" is not valid; expected %s", source_.c_str(),
                    e.line, e.name.c_str(), key, v->c_str(), expected);
  }
  // Integer attribute (decimal, or hex with 0x). *present tells whether it was there.
  Status intAttr(const XmlElement& e, const char* key, int64_t lo, int64_t hi, int64_t* out, bool* present,
                 const char* expected);
  // Hexadecimal attribute ("0x10de" or "10de").
  Status hexAttr(const XmlElement& e, const char* key, uint64_t hi, uint64_t* out, bool* present, const char* expected);

  Status addCpu(const XmlElement& e);
  Status addPci(const XmlElement& e, NodeRef parent, int cpu);
  Status addNicPorts(const XmlElement& nicElem, NodeRef nic);
  Status addGpuAttrs(const XmlElement& gpuElem, NodeRef gpu);
  Status readPciAttrs(const XmlElement& e, PciAttrs* pci);
  Status connectNvlinks();
  void sortNodes();

  const std::string& source_;
  TopoSystem& sys_;
  std::map<int64_t, int> pciLines_;  // bus id -> line, to name both places of a duplicate
  std::vector<PendingNvlink> nvlinks_;
  std::vector<PendingC2c> c2cs_;
  std::vector<int> gpuCpu_;  // GPU index -> CPU index it hangs under
};

Status Builder::intAttr(const XmlElement& e, const char* key, int64_t lo, int64_t hi, int64_t* out, bool* present,
                        const char* expected) {
  const std::string* v = e.attr(key);
  *present = v != nullptr;
  if (v == nullptr) return kOk;
  const char* s = v->c_str();
  while (*s == ' ') ++s;
  char* end = nullptr;
  errno = 0;
  long long r = std::strtoll(s, &end, 0);
  while (end != nullptr && *end == ' ') ++end;
  if (end == s || errno != 0 || *end != '\0' || r < lo || r > hi) return failAttr(e, key, expected);
  *out = r;
  return kOk;
}

Status Builder::hexAttr(const XmlElement& e, const char* key, uint64_t hi, uint64_t* out, bool* present,
                        const char* expected) {
  const std::string* v = e.attr(key);
  *present = v != nullptr;
  if (v == nullptr) return kOk;
  const char* s = v->c_str();
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  char* end = nullptr;
  errno = 0;
  unsigned long long r = std::strtoull(s, &end, 16);
  if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ' || errno != 0 || *end != '\0' || r > hi)
    return failAttr(e, key, expected);
  *out = r;
  return kOk;
}

Status Builder::build(const XmlElement& root) {
  if (root.name != "system")
    return CC_ERROR(Status::kInvalidArgument, "%s line %d: the top element is <%s>; expected <system version=\"1\">",
                    source_.c_str(), root.line, root.name.c_str());
  int64_t version;
  bool present;
  CC_CHECK(intAttr(root, "version", 0, INT_MAX, &version, &present, "a version number such as 1"));
  for (const auto& c : root.children) {
    if (c.name == "cpu") CC_CHECK(addCpu(c));
  }
  // CPUs (NUMA domains) talk through the inter-socket link.
  const auto& cpus = sys_.nodes(NodeType::kCpu);
  for (int a = 0; a < static_cast<int>(cpus.size()); ++a) {
    for (int b = a + 1; b < static_cast<int>(cpus.size()); ++b) {
      float bw = std::min(interCpuBw(cpus[a].cpu), interCpuBw(cpus[b].cpu));
      sys_.connect(NodeRef{NodeType::kCpu, a}, NodeRef{NodeType::kCpu, b}, LinkType::kSys, bw);
    }
  }
  CC_CHECK(connectNvlinks());
  sortNodes();
  return kOk;
}

Status Builder::addCpu(const XmlElement& e) {
  int64_t numa = -1, fam = -1, model = -1;
  bool hasNuma, hasFam, hasModel;
  CC_CHECK(intAttr(e, "numaid", 0, INT_MAX, &numa, &hasNuma, "the NUMA node number, e.g. numaid=\"0\""));
  if (!hasNuma) return failAttr(e, "numaid", "the NUMA node number, e.g. numaid=\"0\"");
  if (sys_.find(NodeType::kCpu, numa) >= 0) return fail(e, "repeats a numaid; each NUMA node appears once");
  CC_CHECK(intAttr(e, "familyid", 0, INT_MAX, &fam, &hasFam, "the CPU family number, e.g. familyid=\"6\""));
  CC_CHECK(intAttr(e, "modelid", 0, INT_MAX, &model, &hasModel, "the CPU model number, e.g. modelid=\"143\""));
  NodeRef ref = sys_.addNode(NodeType::kCpu, numa);
  CpuAttrs& c = sys_.node(ref).cpu;
  c.numaId = static_cast<int>(numa);
  if (const std::string* v = e.attr("affinity")) c.affinity = *v;
  if (const std::string* v = e.attr("arch")) c.arch = *v;
  if (const std::string* v = e.attr("vendor")) c.vendor = *v;
  c.familyId = static_cast<int>(fam);
  c.modelId = static_cast<int>(model);
  for (const auto& child : e.children) {
    if (child.name == "pci") {
      CC_CHECK(addPci(child, ref, ref.index));
    } else if (child.name == "nic") {
      // A NIC with no PCI position (virtual or unknown): one per CPU, as close as it can be.
      int64_t id = -1 - ref.index;
      int idx = sys_.find(NodeType::kNic, id);
      NodeRef nic{NodeType::kNic, idx};
      if (idx < 0) {
        nic = sys_.addNode(NodeType::kNic, id);
        sys_.connect(ref, nic, LinkType::kPci, kLocBw);
      }
      CC_CHECK(addNicPorts(child, nic));
    }
  }
  return kOk;
}

Status Builder::readPciAttrs(const XmlElement& e, PciAttrs* pci) {
  uint64_t v;
  bool present;
  CC_CHECK(hexAttr(e, "class", 0xffffff, &v, &present, "a 24-bit PCI class code such as 0x060400"));
  if (present) pci->classCode = static_cast<uint32_t>(v);
  CC_CHECK(hexAttr(e, "vendor", 0xffff, &v, &present, "a 16-bit PCI vendor id such as 0x10de"));
  if (present) pci->vendor = static_cast<uint16_t>(v);
  CC_CHECK(hexAttr(e, "device", 0xffff, &v, &present, "a 16-bit PCI device id"));
  if (present) pci->device = static_cast<uint16_t>(v);
  CC_CHECK(hexAttr(e, "subsystem_vendor", 0xffff, &v, &present, "a 16-bit PCI vendor id"));
  if (present) pci->subsystemVendor = static_cast<uint16_t>(v);
  CC_CHECK(hexAttr(e, "subsystem_device", 0xffff, &v, &present, "a 16-bit PCI device id"));
  if (present) pci->subsystemDevice = static_cast<uint16_t>(v);
  int64_t width = 0;
  CC_CHECK(intAttr(e, "link_width", 0, 64, &width, &present, "a lane count from 0 to 64, e.g. link_width=\"16\""));
  pci->linkWidth = static_cast<int>(width);
  // sysfs writes "Unknown" for some links; that and other unparsable speeds count as unknown.
  if (const std::string* s = e.attr("link_speed")) {
    float gts = 0;
    if (!s->empty() && !parseLinkSpeed(*s, &gts))
      CC_INFO(kSubsysGraph, "%s line %d: link_speed=\"%s\" not understood; assuming PCIe Gen3", source_.c_str(), e.line,
              s->c_str());
    pci->linkGts = gts;
  }
  return kOk;
}

Status Builder::addPci(const XmlElement& e, NodeRef parent, int cpu) {
  const std::string* busStr = e.attr("busid");
  int64_t busId;
  if (busStr == nullptr || !parseBusId(*busStr, &busId))
    return failAttr(e, "busid", "a PCI bus id such as busid=\"0000:17:00.0\"");
  PciAttrs pci;
  CC_CHECK(readPciAttrs(e, &pci));
  const XmlElement* gpuElem = e.child("gpu");
  const XmlElement* nicElem = e.child("nic");
  if (!e.hasAttr("class") && gpuElem == nullptr && nicElem == nullptr)
    return failAttr(e, "class", "a PCI class code such as class=\"0x060400\" (0x0302xx GPU, 0x0207xx InfiniBand, 0x0200xx Ethernet)");
  const uint32_t cls = pci.classCode;
  const float bw = pciBw(pci.linkGts, pci.linkWidth);

  auto checkUnique = [&](int64_t id) -> Status {
    auto [it, inserted] = pciLines_.emplace(id, e.line);
    if (!inserted)
      return CC_ERROR(Status::kInvalidArgument, "%s line %d: busid %s already appears on line %d; each PCI device appears once",
                      source_.c_str(), e.line, busStr->c_str(), it->second);
    return kOk;
  };

  if (gpuElem != nullptr || (nicElem == nullptr && (cls >> 16) == 0x03)) {
    CC_CHECK(checkUnique(busId));
    NodeRef gpu = sys_.addNode(NodeType::kGpu, busId);
    sys_.node(gpu).pci = pci;
    gpuCpu_.resize(static_cast<size_t>(gpu.index) + 1, cpu);
    gpuCpu_[gpu.index] = cpu;
    sys_.connect(gpu, parent, LinkType::kPci, bw);
    if (gpuElem != nullptr) {
      CC_CHECK(addGpuAttrs(*gpuElem, gpu));
    } else {
      // Vendor files list only datacenter GPUs wired for GPUDirect.
      sys_.node(gpu).gpu.gdr = true;
    }
    return kOk;
  }
  if (nicElem != nullptr || (cls >> 16) == 0x02) {
    // Ports of one adapter (functions .0, .1) share its PCI link: one NIC node, one NET per port.
    int64_t nicId = busId & ~int64_t{0xf};
    CC_CHECK(checkUnique(busId));
    int idx = sys_.find(NodeType::kNic, nicId);
    NodeRef nic{NodeType::kNic, idx};
    if (idx < 0) {
      nic = sys_.addNode(NodeType::kNic, nicId);
      sys_.node(nic).pci = pci;
      sys_.connect(nic, parent, LinkType::kPci, bw);
    }
    if (nicElem != nullptr) {
      for (const auto& c : e.children)
        if (c.name == "nic") CC_CHECK(addNicPorts(c, nic));
    } else {
      NodeRef net = sys_.addNode(NodeType::kNet, sys_.count(NodeType::kNet));
      NetAttrs& n = sys_.node(net).net;
      n.name = busIdToString(busId);
      n.gdr = (cls & kClassBridgeMask) == kClassInfiniband;
      n.nic = nic.index;
      sys_.connect(nic, net, LinkType::kNet, netBw(0));
    }
    return kOk;
  }
  if ((cls & kClassBridgeMask) == kClassNvSwitch || cls == kClassCpuLink) {
    // NVSwitches (and NVLink bridges) on the PCI bus carry no PCIe traffic of ours; the NVLinks that
    // reach them come from the GPUs' <nvlink> elements.
    return kOk;
  }
  CC_CHECK(checkUnique(busId));
  NodeRef node = sys_.addNode(NodeType::kPci, busId);
  sys_.node(node).pci = pci;
  sys_.connect(node, parent, LinkType::kPci, bw);
  for (const auto& c : e.children)
    if (c.name == "pci") CC_CHECK(addPci(c, node, cpu));
  return kOk;
}

Status Builder::addGpuAttrs(const XmlElement& g, NodeRef ref) {
  int64_t dev = -1, rank = -1, sm = 0, gdr = 0, mem = 0;
  bool present;
  CC_CHECK(intAttr(g, "dev", 0, INT_MAX, &dev, &present, "the GPU's device ordinal, e.g. dev=\"0\""));
  if (!present) dev = -1;
  CC_CHECK(intAttr(g, "rank", -1, INT_MAX, &rank, &present, "the rank using this GPU, e.g. rank=\"0\""));
  if (!present) rank = -1;
  CC_CHECK(intAttr(g, "sm", 0, 10000, &sm, &present, "the compute capability times ten, e.g. sm=\"90\""));
  CC_CHECK(intAttr(g, "gdr", 0, 1, &gdr, &present, "0 or 1"));
  CC_CHECK(intAttr(g, "mem", 0, INT64_MAX / 2, &mem, &present, "device memory in MiB"));
  GpuAttrs& a = sys_.node(ref).gpu;
  a.dev = static_cast<int>(dev);
  a.rank = static_cast<int>(rank);
  a.sm = static_cast<int>(sm);
  a.gdr = gdr != 0;
  a.memMiB = mem;
  for (const auto& c : g.children) {
    if (c.name == "nvlink") {
      PendingNvlink p{ref.index, "", 0, 0, false, c.line};
      const std::string* t = c.attr("target");
      if (t == nullptr) return failAttr(c, "target", "the bus id at the other end, e.g. target=\"0000:c1:00.0\"");
      p.target = *t;
      int64_t count;
      CC_CHECK(intAttr(c, "count", 1, 1024, &count, &present, "the number of links, e.g. count=\"12\""));
      if (!present) return failAttr(c, "count", "the number of links, e.g. count=\"12\"");
      p.count = static_cast<int>(count);
      uint64_t tclass;
      CC_CHECK(hexAttr(c, "tclass", 0xffffff, &tclass, &p.hasTclass,
                       "the target's PCI class: 0x030200 GPU, 0x068000 NVSwitch, 0x068001 CPU"));
      p.tclass = static_cast<uint32_t>(tclass);
      nvlinks_.push_back(p);
    } else if (c.name == "c2c") {
      int64_t count, bwMb;
      CC_CHECK(intAttr(c, "count", 1, 1024, &count, &present, "the number of C2C links, e.g. count=\"10\""));
      if (!present) return failAttr(c, "count", "the number of C2C links, e.g. count=\"10\"");
      CC_CHECK(intAttr(c, "bw", 1, 100000000, &bwMb, &present, "MB/s per link, e.g. bw=\"45000\""));
      if (!present) return failAttr(c, "bw", "MB/s per link, e.g. bw=\"45000\"");
      c2cs_.push_back(PendingC2c{ref.index, static_cast<int>(count), static_cast<int>(bwMb)});
    }
  }
  return kOk;
}

Status Builder::addNicPorts(const XmlElement& nicElem, NodeRef nic) {
  for (const auto& c : nicElem.children) {
    if (c.name != "net") continue;
    int64_t dev = -1, speed = 0, port = 1, maxconn = 0, gdr = 0, coll = 0;
    bool present;
    CC_CHECK(intAttr(c, "dev", 0, INT_MAX, &dev, &present, "the net device index, e.g. dev=\"0\""));
    if (!present) dev = -1;
    // NCCL writes -1 for NICs that report no speed.
    CC_CHECK(intAttr(c, "speed", -1, INT_MAX, &speed, &present, "the port speed in Mb/s, e.g. speed=\"200000\""));
    CC_CHECK(intAttr(c, "port", 0, INT_MAX, &port, &present, "the port number, e.g. port=\"1\""));
    if (!present) port = 1;
    CC_CHECK(intAttr(c, "maxconn", 0, INT_MAX, &maxconn, &present, "the most connections, e.g. maxconn=\"131072\""));
    CC_CHECK(intAttr(c, "gdr", 0, 1, &gdr, &present, "0 or 1"));
    CC_CHECK(intAttr(c, "coll", 0, 1, &coll, &present, "0 or 1"));
    uint64_t guid = 0;
    CC_CHECK(hexAttr(c, "guid", UINT64_MAX, &guid, &present, "a hexadecimal GUID such as 0x1c34da0300a1b2c3"));
    float latency = 0;
    if (const std::string* l = c.attr("latency")) {
      char* end = nullptr;
      double v = std::strtod(l->c_str(), &end);
      if (end == l->c_str() || *end != '\0' || !(v >= 0) || v > 1e9)
        return failAttr(c, "latency", "a non-negative number of microseconds");
      latency = static_cast<float>(v);
    }
    NodeRef net = sys_.addNode(NodeType::kNet, sys_.count(NodeType::kNet));
    NetAttrs& n = sys_.node(net).net;
    const std::string* name = c.attr("name");
    n.name = name != nullptr && !name->empty() ? *name
             : sys_.node(nic).id >= 0      ? busIdToString(sys_.node(nic).id)
                                           : "net" + std::to_string(net.index);
    n.dev = static_cast<int>(dev);
    n.port = static_cast<int>(port);
    n.speedMbps = speed > 0 ? static_cast<int>(speed) : 0;
    n.guid = guid;
    n.gdr = gdr != 0;
    n.maxConn = static_cast<int>(maxconn);
    n.coll = coll != 0;
    n.latencyUs = latency;
    n.nic = nic.index;
    sys_.connect(nic, net, LinkType::kNet, netBw(n.speedMbps));
  }
  return kOk;
}

Status Builder::connectNvlinks() {
  // GPU<->GPU link counts: each side may declare its links, or only one side may; the pair gets
  // the larger declared count in both directions.
  std::map<std::pair<int, int>, int> gpuPairs;
  int nvs = -1;
  for (const auto& p : nvlinks_) {
    int64_t target;
    bool targetIsBus = parseBusId(p.target, &target);
    int peer = targetIsBus ? sys_.find(NodeType::kGpu, target) : -1;
    bool toGpu = p.hasTclass ? (p.tclass >> 16) == 0x03 : peer >= 0;
    bool toCpu = p.hasTclass && (p.tclass == kClassCpuLink || (p.tclass & kClassBridgeMask) == 0x060000);
    if (!targetIsBus && (toGpu || !p.hasTclass))
      return CC_ERROR(Status::kInvalidArgument, "%s line %d: <nvlink> target=\"%s\" is not valid; expected a PCI bus id such as 0000:c1:00.0",
                      source_.c_str(), p.line, p.target.c_str());
    const TopoNode& gpu = sys_.nodes(NodeType::kGpu)[p.gpu];
    float bw = nvlinkBwPerLink(gpu.gpu.sm) * static_cast<float>(p.count);
    if (toGpu) {
      if (peer < 0) {
        CC_INFO(kSubsysGraph, "%s line %d: NVLink to GPU %s, which is not in the topology; ignored", source_.c_str(), p.line,
                p.target.c_str());
        continue;
      }
      if (peer == p.gpu) continue;
      int& c = gpuPairs[{p.gpu, peer}];
      c += p.count;
    } else if (toCpu) {
      sys_.connect(NodeRef{NodeType::kGpu, p.gpu}, NodeRef{NodeType::kCpu, gpuCpu_[p.gpu]}, LinkType::kNvl, bw);
    } else {
      // All NVSwitches of a node form one switching fabric: one NVS node.
      if (nvs < 0) nvs = sys_.addNode(NodeType::kNvs, 0).index;
      sys_.connect(NodeRef{NodeType::kGpu, p.gpu}, NodeRef{NodeType::kNvs, nvs}, LinkType::kNvl, bw);
    }
  }
  for (const auto& [pair, count] : gpuPairs) {
    auto [a, b] = pair;
    auto rev = gpuPairs.find({b, a});
    if (rev != gpuPairs.end() && a > b) continue;  // handled from the other side
    int links = std::max(count, rev != gpuPairs.end() ? rev->second : 0);
    int sm = std::min(sys_.nodes(NodeType::kGpu)[a].gpu.sm, sys_.nodes(NodeType::kGpu)[b].gpu.sm);
    if (sm == 0) sm = std::max(sys_.nodes(NodeType::kGpu)[a].gpu.sm, sys_.nodes(NodeType::kGpu)[b].gpu.sm);
    sys_.connect(NodeRef{NodeType::kGpu, a}, NodeRef{NodeType::kGpu, b}, LinkType::kNvl,
                 nvlinkBwPerLink(sm) * static_cast<float>(links));
  }
  for (const auto& c : c2cs_) {
    float bw = static_cast<float>(c.count) * static_cast<float>(c.mbpsPerLink) / 1000.0f;
    sys_.connect(NodeRef{NodeType::kGpu, c.gpu}, NodeRef{NodeType::kCpu, gpuCpu_[c.gpu]}, LinkType::kC2c, bw);
  }
  return kOk;
}

// Orders nodes the way users number them: GPUs and NICs by bus id (NVML's order), CPUs by NUMA
// id, NETs by their recorded dev index and otherwise by document order. Links are remapped.
void Builder::sortNodes() {
  std::array<std::vector<int>, kNodeTypeCount> newIndex;
  for (int t = 0; t < kNodeTypeCount; ++t) {
    auto& v = sys_.nodes(static_cast<NodeType>(t));
    std::vector<int> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    if (static_cast<NodeType>(t) == NodeType::kNet) {
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        int da = v[a].net.dev < 0 ? INT_MAX : v[a].net.dev, db = v[b].net.dev < 0 ? INT_MAX : v[b].net.dev;
        return da < db;
      });
    } else {
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v[a].id < v[b].id; });
    }
    newIndex[t].assign(v.size(), -1);
    std::vector<TopoNode> sorted;
    sorted.reserve(v.size());
    for (size_t i = 0; i < order.size(); ++i) {
      newIndex[t][order[i]] = static_cast<int>(i);
      sorted.push_back(std::move(v[order[i]]));
    }
    v = std::move(sorted);
  }
  for (int t = 0; t < kNodeTypeCount; ++t) {
    for (auto& n : sys_.nodes(static_cast<NodeType>(t))) {
      for (auto& l : n.links) l.remote.index = newIndex[static_cast<int>(l.remote.type)][l.remote.index];
      if (n.type == NodeType::kNet && n.net.nic >= 0) n.net.nic = newIndex[static_cast<int>(NodeType::kNic)][n.net.nic];
      if (n.type == NodeType::kNet) n.id = static_cast<int64_t>(&n - sys_.nodes(NodeType::kNet).data());
    }
  }
}

}  // namespace

Status buildSystemFromXml(const XmlElement& root, const std::string& source, TopoSystem* out) {
  TopoSystem sys;
  sys.source = source;
  Builder b(source, &sys);
  CC_CHECK(b.build(root));
  *out = std::move(sys);
  return kOk;
}

}  // namespace collcomm::detail
