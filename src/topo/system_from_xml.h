// Turning an NCCL-format topology tree into a TopoSystem. Setup tier.
#pragma once

#include <string>

#include "common/status.h"
#include "topo/system.h"
#include "topo/xml_tree.h"

namespace collcomm::detail {

// Builds *out (paths not yet computed) from a <system> tree. Accepts NCCL's full dumps (<cpu>,
// nested <pci>, <gpu> with <nvlink>/<c2c>, <nic><net>) and vendors' partial files, where a device is
// only a <pci> whose class code says what it is (0x03xxxx GPU, 0x0207xx InfiniBand NIC, 0x02xxxx
// Ethernet NIC). Unknown elements and attributes are ignored. A missing or malformed required
// attribute returns kInvalidArgument naming `source`, the line, and what was expected; *out is
// untouched then.
Status buildSystemFromXml(const XmlElement& root, const std::string& source, TopoSystem* out);

}  // namespace collcomm::detail
