// cc-topo: prints the topology collcomm sees (detected, or from a file) as a tree, GPU/NIC path
// matrices and nearest NICs, or as one JSON object; optionally dumps it as NCCL-format XML.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/status.h"
#include "topo/report.h"
#include "topo/topo.h"
#include "version_text.h"

using namespace collcomm::detail;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: cc-topo [--topo FILE] [--json] [--dump FILE]\n"
               "  --topo FILE  read this NCCL-format topology XML instead of detecting the machine\n"
               "               (default: COLLCOMM_TOPO_FILE if set, else detection)\n"
               "  --json       print one JSON object instead of the tree and matrices\n"
               "  --dump FILE  also write the topology used as NCCL-format XML\n"
               "  --version    the collcomm version cc-topo runs with\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string topoFile, dumpFile;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--topo" || a == "--dump") && i + 1 < argc) {
      (a == "--topo" ? topoFile : dumpFile) = argv[++i];
    } else if (a.rfind("--topo=", 0) == 0) {
      topoFile = a.substr(7);
    } else if (a.rfind("--dump=", 0) == 0) {
      dumpFile = a.substr(7);
    } else if (a == "--json") {
      json = true;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      return ccPrintToolVersion("cc-topo");
    } else {
      std::fprintf(stderr, "cc-topo: unknown or incomplete argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  TopoSystem sys;
  XmlElement xml;
  Status st;
  if (!topoFile.empty()) {
    st = readTopologyXml(topoFile, &xml);
    if (isOk(st)) st = systemFromXml(xml, topoFile, &sys);
  } else {
    st = getTopology(&sys, &xml);
  }
  if (!isOk(st)) {
    std::fprintf(stderr, "cc-topo: %s\n", threadLastError().c_str());
    return 1;
  }
  if (!dumpFile.empty()) {
    st = writeTopologyXml(dumpFile, xml);
    if (!isOk(st)) {
      std::fprintf(stderr, "cc-topo: %s\n", threadLastError().c_str());
      return 1;
    }
  }
  if (json) {
    std::fputs(formatTopoJson(sys).c_str(), stdout);
  } else {
    std::fputs(formatTopoTree(sys).c_str(), stdout);
    std::fputs("\n", stdout);
    std::fputs(formatTopoMatrices(sys).c_str(), stdout);
  }
  return 0;
}
