// Merging two topology trees: a user's file laid over what detection found. Setup tier.
#pragma once

#include "topo/xml_tree.h"

namespace collcomm::detail {

// Lays `over` onto *base. Elements match by name and identity (<cpu> by numaid, <pci> by busid,
// <net> by name, <nvlink> by target; <gpu>, <nic>, <c2c> by name under a matched parent). A match
// takes over's attributes (over wins) and merges children; an unmatched element is appended, and a
// <pci> of over removes any same-busid <pci> elsewhere in base first (the file decides where a
// device sits).
void mergeTopologyXml(XmlElement* base, const XmlElement& over);

}  // namespace collcomm::detail
