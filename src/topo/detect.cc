// detectLocalTopology: runs the detection pieces in order (hwloc, then NICs, then GPUs) and the
// small sysfs helpers they share.
#include "topo/detect.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "common/log.h"
#include "topo/system.h"

namespace collcomm::detail {
namespace detect {

bool readSysfs(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::string line;
  if (!std::getline(f, line)) return false;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  *out = line;
  return true;
}

XmlElement* findPci(XmlElement* root, int64_t busId) {
  for (auto& c : root->children) {
    if (c.name == "pci") {
      int64_t id;
      const std::string* b = c.attr("busid");
      if (b != nullptr && parseBusId(*b, &id) && id == busId) return &c;
    }
    if (XmlElement* found = findPci(&c, busId)) return found;
  }
  return nullptr;
}

void setPciLinkAttrs(XmlElement* pci, const std::string& busid) {
  const std::string dir = "/sys/bus/pci/devices/" + busid + "/";
  std::string speed, width;
  bool haveSpeed = readSysfs(dir + "max_link_speed", &speed);
  bool haveWidth = readSysfs(dir + "max_link_width", &width);
  // The link runs at the slower of the device and the port above it.
  std::string portSpeed, portWidth;
  if (readSysfs(dir + "../max_link_speed", &portSpeed) && haveSpeed) {
    float a = 0, b = 0;
    if (std::sscanf(portSpeed.c_str(), "%f", &b) == 1 && std::sscanf(speed.c_str(), "%f", &a) == 1 && b > 0 && b < a)
      speed = portSpeed;
  }
  if (readSysfs(dir + "../max_link_width", &portWidth) && haveWidth) {
    int a = 0, b = 0;
    if (std::sscanf(portWidth.c_str(), "%d", &b) == 1 && std::sscanf(width.c_str(), "%d", &a) == 1 && b > 0 && b < a)
      width = portWidth;
  }
  if (haveSpeed && speed.find("GT/s") != std::string::npos) pci->setAttr("link_speed", speed);
  if (haveWidth) {
    int w = 0;
    if (std::sscanf(width.c_str(), "%d", &w) == 1 && w > 0 && w <= 64) pci->setAttr("link_width", std::to_string(w));
  }
}

}  // namespace detect

namespace {

// Drops what detection could not turn into a device of ours: NIC functions without a usable
// port, and bridges left with nothing under them.
void prune(XmlElement* e) {
  for (auto& c : e->children) prune(&c);
  auto& c = e->children;
  c.erase(std::remove_if(c.begin(), c.end(),
                         [](const XmlElement& x) {
                           if (x.name != "pci") return false;
                           const std::string* cls = x.attr("class");
                           std::string k = cls != nullptr ? *cls : "";
                           if (k.rfind("0x02", 0) == 0) return x.child("nic") == nullptr;
                           if (k.rfind("0x0604", 0) == 0) return x.children.empty();
                           return false;
                         }),
          c.end());
}

}  // namespace

Status detectLocalTopology(XmlElement* root) {
  XmlElement sys;
  sys.name = "system";
  sys.setAttr("version", "1");
  CC_CHECK(detect::addHwloc(&sys));
  CC_CHECK(detect::addNets(&sys));
  CC_CHECK(detect::addNvml(&sys));
  prune(&sys);
  *root = std::move(sys);
  return kOk;
}

}  // namespace collcomm::detail
