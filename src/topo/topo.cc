// getTopology and file I/O: where the system comes from and where it is dumped.
#include "topo/topo.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/params.h"
#include "topo/detect.h"
#include "topo/system_from_xml.h"
#include "topo/xml_merge.h"

namespace collcomm::detail {

namespace {
constexpr size_t kMaxFileBytes = 64u << 20;
}

Status readTopologyXml(const std::string& path, XmlElement* root) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return CC_ERROR(Status::kInvalidArgument, "cannot open topology file %s: %s", path.c_str(), std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (text.size() > kMaxFileBytes)
    return CC_ERROR(Status::kInvalidArgument, "topology file %s is %zu bytes; more than any topology needs (64 MiB)",
                    path.c_str(), text.size());
  return parseXml(text, path, root);
}

Status writeTopologyXml(const std::string& path, const XmlElement& root) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return CC_ERROR(Status::kSystemError, "cannot write topology file %s: %s", path.c_str(), std::strerror(errno));
  f << serializeXml(root);
  f.flush();
  if (!f) return CC_ERROR(Status::kSystemError, "writing topology file %s failed: %s", path.c_str(), std::strerror(errno));
  return kOk;
}

Status systemFromXml(const XmlElement& root, const std::string& source, TopoSystem* out) {
  TopoSystem sys;
  CC_CHECK(buildSystemFromXml(root, source, &sys));
  computePaths(&sys, pathOptionsFromEnv(sys));
  *out = std::move(sys);
  return kOk;
}

Status loadTopologyFile(const std::string& path, TopoSystem* out) {
  XmlElement root;
  CC_CHECK(readTopologyXml(path, &root));
  return systemFromXml(root, path, out);
}

Status getTopology(TopoSystem* out, XmlElement* usedXml) {
  XmlElement xml;
  std::string source;
  const std::string file = paramStr(Param::kTopoFile);
  if (!file.empty()) {
    CC_INFO(kSubsysGraph, "COLLCOMM_TOPO_FILE set by environment to %s", file.c_str());
    XmlElement fromFile;
    CC_CHECK(readTopologyXml(file, &fromFile));
    if (paramInt(Param::kTopoMerge) == 1) {
      CC_CHECK(detectLocalTopology(&xml));
      mergeTopologyXml(&xml, fromFile);
      source = file + " over detected";
    } else {
      xml = std::move(fromFile);
      source = file;
    }
  } else {
    CC_CHECK(detectLocalTopology(&xml));
    source = "detected";
  }
  TopoSystem sys;
  CC_CHECK(systemFromXml(xml, source, &sys));
  CC_INFO(kSubsysGraph, "topology (%s): %d CPU(s), %d GPU(s), %d NIC port(s), %d PCI switch(es)", source.c_str(),
          sys.count(NodeType::kCpu), sys.count(NodeType::kGpu), sys.count(NodeType::kNet), sys.count(NodeType::kPci));
  const std::string dump = paramStr(Param::kTopoDumpFile);
  if (!dump.empty()) {
    CC_INFO(kSubsysGraph, "COLLCOMM_TOPO_DUMP_FILE set by environment to %s", dump.c_str());
    CC_CHECK(writeTopologyXml(dump, xml));
  }
  *out = std::move(sys);
  if (usedXml != nullptr) *usedXml = std::move(xml);
  return kOk;
}

}  // namespace collcomm::detail
