// libFuzzer target: arbitrary bytes as a topology file through the XML parser, the system
// builder, path computation and every report. Must never crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "topo/paths.h"
#include "topo/report.h"
#include "topo/system_from_xml.h"
#include "topo/xml_tree.h"

using namespace collcomm::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1u << 20)) return 0;
  XmlElement root;
  if (!isOk(parseXml(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.xml", &root))) return 0;
  (void)serializeXml(root);
  TopoSystem sys;
  if (!isOk(buildSystemFromXml(root, "fuzz.xml", &sys))) return 0;
  computePaths(&sys, PathOptions{});
  (void)formatTopoTree(sys);
  (void)formatTopoMatrices(sys);
  (void)formatTopoJson(sys);
  return 0;
}
