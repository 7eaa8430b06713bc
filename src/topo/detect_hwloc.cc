// CPUs/NUMA domains and the PCI branches above GPUs and NICs, from hwloc.
#include <hwloc.h>
#include <sys/utsname.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "topo/detect.h"
#include "topo/system.h"

namespace collcomm::detail::detect {
namespace {

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

struct TopologyGuard {
  hwloc_topology_t t = nullptr;
  ~TopologyGuard() {
    if (t != nullptr) hwloc_topology_destroy(t);
  }
};

std::string archName() {
  struct utsname u;
  if (uname(&u) != 0) return "";
  std::string m = u.machine;
  if (m == "aarch64" || m == "arm64") return "arm64";
  if (m.rfind("ppc64", 0) == 0) return "ppc64";
  return m;
}

// Linux cpumask text: 32-bit hex words, most significant first ("0000ffff,0000ffff").
std::string cpumaskText(hwloc_const_bitmap_t set) {
  int last = hwloc_bitmap_last(set);
  if (last < 0) return "00000000";
  int words = last / 32 + 1;
  std::string out;
  for (int w = words - 1; w >= 0; --w) {
    unsigned v = 0;
    for (int b = 0; b < 32; ++b)
      if (hwloc_bitmap_isset(set, static_cast<unsigned>(w * 32 + b))) v |= 1u << b;
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%08x", v);
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

std::string hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%0*x", digits, v);
  return buf;
}

std::string busIdText(const PciAttr& p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", static_cast<unsigned>(p.domain), p.bus, p.dev, p.func);
  return buf;
}

// Fills a <pci> element's attributes for this PCI function.
void fillPci(XmlElement* e, const PciAttr& p) {
  std::string busid = busIdText(p);
  e->setAttr("busid", busid);
  std::string cls;
  unsigned full = static_cast<unsigned>(p.class_id) << 8;
  if (readSysfs("/sys/bus/pci/devices/" + busid + "/class", &cls)) {
    unsigned v = 0;
    if (std::sscanf(cls.c_str(), "%x", &v) == 1) full = v;
  }
  e->setAttr("class", hex(full, 6));
  e->setAttr("vendor", hex(p.vendor_id, 4));
  e->setAttr("device", hex(p.device_id, 4));
  e->setAttr("subsystem_vendor", hex(p.subvendor_id, 4));
  e->setAttr("subsystem_device", hex(p.subdevice_id, 4));
  setPciLinkAttrs(e, busid);
}

XmlElement* findChildPci(XmlElement* parent, const std::string& busid) {
  for (auto& c : parent->children) {
    const std::string* b = c.attr("busid");
    if (c.name == "pci" && b != nullptr && *b == busid) return &c;
  }
  return nullptr;
}

bool interesting(const PciAttr& p) {
  unsigned base = p.class_id >> 8;
  if (base == 0x02) return true;                         // network controllers
  if (base == 0x03 && p.vendor_id == 0x10de) return true;  // NVIDIA GPUs
  return p.class_id == 0x0207;                            // InfiniBand
}

}  // namespace

Status addHwloc(XmlElement* root) {
  TopologyGuard topo;
  if (hwloc_topology_init(&topo.t) != 0) {
    topo.t = nullptr;
    CC_INFO(kSubsysGraph, "hwloc could not start; topology has one CPU and no PCI tree");
    XmlElement& cpu = root->addChild("cpu");
    cpu.setAttr("numaid", "0");
    cpu.setAttr("arch", archName());
    return kOk;
  }
  hwloc_topology_set_io_types_filter(topo.t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // PCI from hwloc's Linux sysfs backend rather than its libpciaccess plugin: same tree, no
  // root privileges needed, and libpciaccess leaks on every load.
  hwloc_topology_set_components(topo.t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  if (hwloc_topology_load(topo.t) != 0) {
    CC_INFO(kSubsysGraph, "hwloc could not read this machine; topology has one CPU and no PCI tree");
    XmlElement& cpu = root->addChild("cpu");
    cpu.setAttr("numaid", "0");
    cpu.setAttr("arch", archName());
    return kOk;
  }
  const std::string arch = archName();
  std::vector<int> numaIds;
  int nNuma = hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nNuma; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo.t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    XmlElement& cpu = root->addChild("cpu");
    cpu.setAttr("numaid", std::to_string(numa->os_index));
    numaIds.push_back(static_cast<int>(numa->os_index));
    if (numa->cpuset != nullptr) cpu.setAttr("affinity", cpumaskText(numa->cpuset));
    cpu.setAttr("arch", arch);
    // The package this domain's cores belong to says what the CPU is.
    hwloc_obj_t pkg = nullptr;
    while ((pkg = hwloc_get_next_obj_by_type(topo.t, HWLOC_OBJ_PACKAGE, pkg)) != nullptr)
      if (numa->cpuset != nullptr && hwloc_bitmap_intersects(pkg->cpuset, numa->cpuset)) break;
    if (pkg != nullptr) {
      if (const char* v = hwloc_obj_get_info_by_name(pkg, "CPUVendor")) cpu.setAttr("vendor", v);
      if (const char* v = hwloc_obj_get_info_by_name(pkg, "CPUFamilyNumber")) cpu.setAttr("familyid", v);
      if (const char* v = hwloc_obj_get_info_by_name(pkg, "CPUModelNumber")) cpu.setAttr("modelid", v);
    }
  }
  if (numaIds.empty()) {
    XmlElement& cpu = root->addChild("cpu");
    cpu.setAttr("numaid", "0");
    cpu.setAttr("arch", arch);
    numaIds.push_back(0);
  }

  for (hwloc_obj_t dev = hwloc_get_next_pcidev(topo.t, nullptr); dev != nullptr; dev = hwloc_get_next_pcidev(topo.t, dev)) {
    const PciAttr& p = dev->attr->pcidev;
    if (!interesting(p)) continue;
    // PCI-to-PCI bridges from the host bridge down to the device: a root port, then per PCIe
    // switch an upstream and a downstream port. As in NCCL's dumps, a switch is one <pci> (its
    // upstream port); root ports and downstream ports are not written.
    std::vector<hwloc_obj_t> chain, bridges;
    for (hwloc_obj_t up = dev->parent; up != nullptr && up->type == HWLOC_OBJ_BRIDGE; up = up->parent)
      if (up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) chain.insert(chain.begin(), up);
    for (size_t i = 1; i < chain.size(); i += 2) bridges.push_back(chain[i]);
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo.t, dev);
    int numa = numaIds[0];
    if (anchor != nullptr && anchor->nodeset != nullptr && hwloc_bitmap_first(anchor->nodeset) >= 0)
      numa = hwloc_bitmap_first(anchor->nodeset);
    XmlElement* parent = nullptr;
    for (auto& c : root->children)
      if (c.name == "cpu" && c.attr("numaid") != nullptr && *c.attr("numaid") == std::to_string(numa)) parent = &c;
    if (parent == nullptr) parent = &root->children.front();
    for (hwloc_obj_t b : bridges) {
      std::string busid = busIdText(b->attr->bridge.upstream.pci);
      XmlElement* e = findChildPci(parent, busid);
      if (e == nullptr) {
        e = &parent->addChild("pci");
        fillPci(e, b->attr->bridge.upstream.pci);
      }
      parent = e;
    }
    if (findChildPci(parent, busIdText(p)) == nullptr) fillPci(&parent->addChild("pci"), p);
  }
  return kOk;
}

}  // namespace collcomm::detail::detect
