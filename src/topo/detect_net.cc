// NICs: InfiniBand/RoCE ports (libibverbs via dlopen, port state and rate from sysfs) and network
// interfaces (/sys/class/net), each placed under its PCI device as <nic><net .../></nic>.
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "common/log.h"
#include "topo/detect.h"
#include "topo/system.h"

namespace collcomm::detail::detect {
namespace {

constexpr int kDefaultMaxConn = 65536;

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The PCI function a sysfs device path belongs to: the deepest path component that is a bus id
// (a virtio NIC's device is ".../0000:00:03.0/virtio2"). Empty if it is not on PCI.
std::string pciBusIdOf(const std::string& sysfsDevice) {
  char real[PATH_MAX];
  if (realpath(sysfsDevice.c_str(), real) == nullptr) return "";
  std::string p = real, found;
  size_t start = 0;
  while (start < p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string comp = p.substr(start, end - start);
    int64_t id;
    if (comp.size() >= 12 && comp.find(':') != std::string::npos && parseBusId(comp, &id)) found = comp;
    start = end + 1;
  }
  return found;
}

bool gdrModuleLoaded() {
  return exists("/sys/kernel/mm/memory_peers/nv_mem/version") || exists("/sys/module/nvidia_peermem") ||
         exists("/sys/module/nv_peer_mem");
}

// The <pci> element for this function, created under its NUMA node's <cpu> if hwloc did not
// report it.
XmlElement* ensurePci(XmlElement* root, const std::string& busid) {
  int64_t id;
  if (!parseBusId(busid, &id)) return nullptr;
  if (XmlElement* e = findPci(root, id)) return e;
  std::string numa = "0";
  std::string v;
  if (readSysfs("/sys/bus/pci/devices/" + busid + "/numa_node", &v) && !v.empty() && v[0] != '-') numa = v;
  XmlElement* cpu = nullptr;
  for (auto& c : root->children)
    if (c.name == "cpu" && (cpu == nullptr || (c.attr("numaid") != nullptr && *c.attr("numaid") == numa))) cpu = &c;
  if (cpu == nullptr) {
    cpu = &root->addChild("cpu");
    cpu->setAttr("numaid", numa);
  }
  XmlElement& pci = cpu->addChild("pci");
  pci.setAttr("busid", busid);
  std::string cls;
  pci.setAttr("class", readSysfs("/sys/bus/pci/devices/" + busid + "/class", &cls) ? cls : "0x020000");
  setPciLinkAttrs(&pci, busid);
  return &pci;
}

XmlElement* nicOf(XmlElement* pci) {
  XmlElement* nic = pci->child("nic");
  return nic != nullptr ? nic : &pci->addChild("nic");
}

// libibverbs entry points we need; all take or return opaque pointers, so no verbs header.
struct Verbs {
  void* handle = nullptr;
  void** (*getDeviceList)(int*) = nullptr;
  void (*freeDeviceList)(void**) = nullptr;
  const char* (*getDeviceName)(void*) = nullptr;
  ~Verbs() {
    if (handle != nullptr) dlclose(handle);
  }
  bool load() {
    handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return false;
    getDeviceList = reinterpret_cast<void** (*)(int*)>(dlsym(handle, "ibv_get_device_list"));
    freeDeviceList = reinterpret_cast<void (*)(void**)>(dlsym(handle, "ibv_free_device_list"));
    getDeviceName = reinterpret_cast<const char* (*)(void*)>(dlsym(handle, "ibv_get_device_name"));
    return getDeviceList != nullptr && freeDeviceList != nullptr && getDeviceName != nullptr;
  }
};

// IB/RoCE ports; returns the PCI functions they cover (their netdevs are not listed again).
std::set<std::string> addVerbsPorts(XmlElement* root, int* dev) {
  std::set<std::string> covered;
  if (!exists("/sys/class/infiniband")) {
    CC_INFO(kSubsysGraph, "no InfiniBand/RoCE devices (/sys/class/infiniband is absent)");
    return covered;
  }
  Verbs verbs;
  if (!verbs.load()) {
    CC_INFO(kSubsysGraph, "libibverbs.so.1 not loadable (rdma-core not installed); InfiniBand/RoCE ports skipped");
    return covered;
  }
  int n = 0;
  void** list = verbs.getDeviceList(&n);
  if (list == nullptr) {
    CC_INFO(kSubsysGraph, "libibverbs lists no devices; InfiniBand/RoCE ports skipped");
    return covered;
  }
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i)
    if (const char* name = verbs.getDeviceName(list[i])) names.push_back(name);
  verbs.freeDeviceList(list);
  std::sort(names.begin(), names.end());
  const bool gdr = gdrModuleLoaded();
  for (const std::string& name : names) {
    const std::string dir = "/sys/class/infiniband/" + name;
    std::string busid = pciBusIdOf(dir + "/device");
    if (busid.empty()) continue;
    XmlElement* pci = ensurePci(root, busid);
    if (pci == nullptr) continue;
    covered.insert(busid);
    std::string guid;
    readSysfs(dir + "/node_guid", &guid);
    guid.erase(std::remove(guid.begin(), guid.end(), ':'), guid.end());
    for (const std::string& port : listDir(dir + "/ports")) {
      std::string state, rate;
      if (!readSysfs(dir + "/ports/" + port + "/state", &state) || state.find("ACTIVE") == std::string::npos) {
        CC_INFO(kSubsysGraph, "%s port %s is not active; skipped", name.c_str(), port.c_str());
        continue;
      }
      double gbps = 0;
      if (readSysfs(dir + "/ports/" + port + "/rate", &rate)) std::sscanf(rate.c_str(), "%lf", &gbps);
      XmlElement& net = nicOf(pci)->addChild("net");
      net.setAttr("name", name);
      net.setAttr("dev", std::to_string((*dev)++));
      net.setAttr("speed", std::to_string(static_cast<long long>(gbps * 1000)));
      net.setAttr("port", port);
      if (!guid.empty()) net.setAttr("guid", "0x" + guid);
      net.setAttr("maxconn", std::to_string(kDefaultMaxConn));
      net.setAttr("gdr", gdr ? "1" : "0");
    }
  }
  return covered;
}

void addInterfaces(XmlElement* root, const std::set<std::string>& covered, int* dev) {
  int added = 0;
  for (const std::string& ifname : listDir("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + ifname;
    if (!exists(dir + "/device")) continue;  // loopback, bridges, veth, ifb: no hardware
    std::string busid = pciBusIdOf(dir + "/device");
    if (busid.empty() || covered.count(busid) != 0) continue;
    XmlElement* pci = ensurePci(root, busid);
    if (pci == nullptr) continue;
    std::string speed;
    long mbps = 0;
    if (readSysfs(dir + "/speed", &speed)) std::sscanf(speed.c_str(), "%ld", &mbps);
    XmlElement& net = nicOf(pci)->addChild("net");
    net.setAttr("name", ifname);
    net.setAttr("dev", std::to_string((*dev)++));
    net.setAttr("speed", std::to_string(mbps > 0 ? mbps : 0));
    net.setAttr("port", "0");
    net.setAttr("maxconn", std::to_string(kDefaultMaxConn));
    net.setAttr("gdr", "0");
    ++added;
  }
  if (added == 0) CC_INFO(kSubsysGraph, "no PCI network interfaces in /sys/class/net");
}

}  // namespace

Status addNets(XmlElement* root) {
  int dev = 0;
  std::set<std::string> covered = addVerbsPorts(root, &dev);
  addInterfaces(root, covered, &dev);
  return kOk;
}

}  // namespace collcomm::detail::detect
