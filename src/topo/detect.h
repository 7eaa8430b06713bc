// Detection of the local machine as an NCCL-format topology tree. Setup tier; takes tens of
// milliseconds (hwloc walks sysfs).
#pragma once

#include "common/status.h"
#include "topo/xml_tree.h"

namespace collcomm::detail {

// Fills *root with a <system version="1"> tree for this host: CPUs/NUMA domains and the PCI tree
// from hwloc, PCI link speeds and NICs from sysfs (/sys/class/net, /sys/class/infiniband), GPUs and
// NVLinks from NVML and IB ports from libibverbs (both loaded with dlopen). Whatever is absent is
// skipped with one INFO line; only a failure to allocate is an error. Not thread-safe against a
// concurrent call (hwloc and NVML initialisation are process-wide).
Status detectLocalTopology(XmlElement* root);

// Pieces of detection, each adding what it finds to a tree hwloc has already laid out.
namespace detect {
// CPUs (<cpu> per NUMA node) and the PCI branches that lead to GPUs and NICs.
Status addHwloc(XmlElement* root);
// <nic><net> for network interfaces and InfiniBand/RoCE ports, under their PCI device.
Status addNets(XmlElement* root);
// <gpu> attributes and <nvlink>s from NVML, under the GPUs' PCI devices.
Status addNvml(XmlElement* root);
// The <pci> element with this bus id anywhere in the tree, or nullptr.
XmlElement* findPci(XmlElement* root, int64_t busId);
// Reads a sysfs file's first line, without the newline; false if it cannot be read.
bool readSysfs(const std::string& path, std::string* out);
// PCI link attributes from /sys/bus/pci/devices/<busid> (slower of the device and its port).
void setPciLinkAttrs(XmlElement* pci, const std::string& busid);
}  // namespace detect

}  // namespace collcomm::detail
