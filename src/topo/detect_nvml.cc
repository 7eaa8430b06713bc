// GPUs and NVLinks from NVML, loaded with dlopen so the library runs where no driver is installed.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/log.h"
#include "topo/detect.h"
#include "topo/system.h"

namespace collcomm::detail::detect {
namespace {

// The NVML ABI pieces we use (stable since NVML 11): opaque device handles, int results.
using NvmlDevice = void*;
constexpr int kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct NvmlMemory {
  unsigned long long total, free, used;
};

struct Nvml {
  void* handle = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*getCount)(unsigned*) = nullptr;
  int (*getHandleByIndex)(unsigned, NvmlDevice*) = nullptr;
  int (*getHandleByPciBusId)(const char*, NvmlDevice*) = nullptr;
  int (*getPciInfo)(NvmlDevice, NvmlPciInfo*) = nullptr;
  int (*getComputeCapability)(NvmlDevice, int*, int*) = nullptr;
  int (*getMemoryInfo)(NvmlDevice, NvmlMemory*) = nullptr;
  int (*getNvLinkState)(NvmlDevice, unsigned, int*) = nullptr;
  int (*getNvLinkRemotePciInfo)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  bool initialized = false;

  ~Nvml() {
    if (initialized && shutdown != nullptr) shutdown();
    if (handle != nullptr) dlclose(handle);
  }
  template <typename F>
  void sym(F* f, const char* name) {
    *f = reinterpret_cast<F>(dlsym(handle, name));
  }
  bool load() {
    handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return false;
    sym(&init, "nvmlInit_v2");
    sym(&shutdown, "nvmlShutdown");
    sym(&getCount, "nvmlDeviceGetCount_v2");
    sym(&getHandleByIndex, "nvmlDeviceGetHandleByIndex_v2");
    sym(&getHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2");
    sym(&getPciInfo, "nvmlDeviceGetPciInfo_v3");
    sym(&getComputeCapability, "nvmlDeviceGetCudaComputeCapability");
    sym(&getMemoryInfo, "nvmlDeviceGetMemoryInfo");
    sym(&getNvLinkState, "nvmlDeviceGetNvLinkState");
    sym(&getNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    if (init == nullptr || getCount == nullptr || getHandleByIndex == nullptr || getPciInfo == nullptr) return false;
    initialized = init() == kNvmlSuccess;
    return initialized;
  }
};

bool gdrCapable() {
  struct stat st;
  return stat("/sys/kernel/mm/memory_peers/nv_mem/version", &st) == 0 || stat("/sys/module/nvidia_peermem", &st) == 0 ||
         stat("/sys/module/nv_peer_mem", &st) == 0;
}

// The <pci> elements of NVIDIA GPUs in the tree, in bus id order.
void collectGpuPci(XmlElement* e, std::vector<std::pair<int64_t, XmlElement*>>* out) {
  for (auto& c : e->children) {
    if (c.name == "pci") {
      const std::string* cls = c.attr("class");
      const std::string* vendor = c.attr("vendor");
      const std::string* b = c.attr("busid");
      int64_t id;
      if (cls != nullptr && cls->rfind("0x03", 0) == 0 && vendor != nullptr && *vendor == "0x10de" && b != nullptr &&
          parseBusId(*b, &id))
        out->emplace_back(id, &c);
    }
    collectGpuPci(&c, out);
  }
}

std::string canonicalBusId(const char* nvmlBusId) {
  int64_t id;
  return parseBusId(nvmlBusId, &id) ? busIdToString(id) : std::string(nvmlBusId);
}

}  // namespace

Status addNvml(XmlElement* root) {
  std::vector<std::pair<int64_t, XmlElement*>> gpuPci;
  collectGpuPci(root, &gpuPci);
  std::sort(gpuPci.begin(), gpuPci.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const bool gdr = gdrCapable();
  Nvml nvml;
  if (!nvml.load()) {
    if (gpuPci.empty()) {
      CC_INFO(kSubsysGraph, "no GPU: NVML (libnvidia-ml.so.1) not loadable and no NVIDIA device on the PCI bus");
      return kOk;
    }
    CC_INFO(kSubsysGraph, "NVML not loadable: %zu NVIDIA GPU(s) from the PCI bus, without compute capability or NVLinks",
            gpuPci.size());
    for (size_t i = 0; i < gpuPci.size(); ++i) {
      XmlElement& g = gpuPci[i].second->addChild("gpu");
      g.setAttr("dev", std::to_string(i));
      g.setAttr("gdr", gdr ? "1" : "0");
    }
    return kOk;
  }
  unsigned count = 0;
  if (nvml.getCount(&count) != kNvmlSuccess || count == 0) {
    CC_INFO(kSubsysGraph, "NVML reports no GPU");
    return kOk;
  }
  for (unsigned d = 0; d < count; ++d) {
    NvmlDevice dev;
    NvmlPciInfo pci{};
    if (nvml.getHandleByIndex(d, &dev) != kNvmlSuccess || nvml.getPciInfo(dev, &pci) != kNvmlSuccess) {
      CC_INFO(kSubsysGraph, "NVML device %u: no PCI information; skipped", d);
      continue;
    }
    int64_t busId;
    if (!parseBusId(pci.busId, &busId)) continue;
    XmlElement* pe = findPci(root, busId);
    if (pe == nullptr) {
      // Not on hwloc's PCI tree (hwloc without PCI support): hang it under the first CPU.
      XmlElement* cpu = root->child("cpu");
      if (cpu == nullptr) continue;
      pe = &cpu->addChild("pci");
      pe->setAttr("busid", busIdToString(busId));
      pe->setAttr("class", "0x030200");
      pe->setAttr("vendor", "0x10de");
      setPciLinkAttrs(pe, busIdToString(busId));
    }
    XmlElement& g = *(pe->child("gpu") != nullptr ? pe->child("gpu") : &pe->addChild("gpu"));
    g.setAttr("dev", std::to_string(d));
    int major = 0, minor = 0;
    if (nvml.getComputeCapability != nullptr && nvml.getComputeCapability(dev, &major, &minor) == kNvmlSuccess)
      g.setAttr("sm", std::to_string(major * 10 + minor));
    g.setAttr("gdr", gdr ? "1" : "0");
    NvmlMemory mem{};
    if (nvml.getMemoryInfo != nullptr && nvml.getMemoryInfo(dev, &mem) == kNvmlSuccess)
      g.setAttr("mem", std::to_string(mem.total >> 20));
    if (nvml.getNvLinkState == nullptr || nvml.getNvLinkRemotePciInfo == nullptr) continue;
    std::map<std::string, std::pair<int, std::string>> links;  // target -> (count, tclass)
    for (unsigned l = 0; l < kNvmlMaxLinks; ++l) {
      int active = 0;
      if (nvml.getNvLinkState(dev, l, &active) != kNvmlSuccess || active != 1) continue;
      NvmlPciInfo remote{};
      if (nvml.getNvLinkRemotePciInfo(dev, l, &remote) != kNvmlSuccess) continue;
      std::string target = canonicalBusId(remote.busId);
      NvmlDevice peer;
      std::string tclass = "0x068000";  // NVSwitch unless the far end is a GPU or says otherwise
      if (nvml.getHandleByPciBusId != nullptr && nvml.getHandleByPciBusId(remote.busId, &peer) == kNvmlSuccess) {
        tclass = "0x030200";
      } else {
        std::string cls;
        if (readSysfs("/sys/bus/pci/devices/" + target + "/class", &cls) && cls.rfind("0x0680", 0) != 0 &&
            cls.rfind("0x03", 0) != 0)
          tclass = "0x068001";  // an NVLink to the CPU (POWER9's NPU)
      }
      auto& entry = links[target];
      entry.first += 1;
      entry.second = tclass;
    }
    for (const auto& [target, v] : links) {
      XmlElement& nl = g.addChild("nvlink");
      nl.setAttr("target", target);
      nl.setAttr("count", std::to_string(v.first));
      nl.setAttr("tclass", v.second);
    }
  }
  return kOk;
}

}  // namespace collcomm::detail::detect
