// The topology component's entry points: the machine's system (a file, detection, or one merged
// over the other), file reading and writing. Setup tier.
#pragma once

#include <string>

#include "common/status.h"
#include "topo/paths.h"
#include "topo/system.h"
#include "topo/xml_tree.h"

namespace collcomm::detail {

// Reads and parses an NCCL-format topology file. Errors name the file and line.
Status readTopologyXml(const std::string& path, XmlElement* root);
// Writes the tree as XML, replacing the file.
Status writeTopologyXml(const std::string& path, const XmlElement& root);

// Builds the system from a tree and computes its paths with the environment's PathOptions.
Status systemFromXml(const XmlElement& root, const std::string& source, TopoSystem* out);

// Loads a topology file into a system with paths (the tools' and tests' entry point).
Status loadTopologyFile(const std::string& path, TopoSystem* out);

// The topology the library uses for this host: COLLCOMM_TOPO_FILE when set (merged over
// detection with COLLCOMM_TOPO_MERGE=1), else detection; written to COLLCOMM_TOPO_DUMP_FILE when
// set. *usedXml (optional) receives the tree the system was built from.
Status getTopology(TopoSystem* out, XmlElement* usedXml = nullptr);

}  // namespace collcomm::detail
