// cc-plan: predicts, without running anything, what a collective sweep would measure on a machine
// described by a topology file: nccl-tests' columns (size, count, type, redop, root, time, algbw,
// busbw) from the cost model (plan/cost_model.h) on the rings the topology gives
// (plan/ring_channels.h), with the algorithm, protocol and channels the model chose. Single node so
// far: --nodes above 1 is refused with a sentence.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/status.h"
#include "plan/cost_model.h"
#include "plan/ring_channels.h"
#include "topo/topo.h"
#include "version_text.h"

using namespace collcomm::detail;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: cc-plan --topo FILE [--nodes 1] [--gpus N] [--op OP] [-b MIN] [-e MAX] [-f FACTOR]\n"
               "               [-d TYPE] [--algo ring] [--proto ll|ll128|simple] [--channels N] [--json]\n"
               "  --topo FILE    NCCL-format topology XML of one node (as cc-topo reads)\n"
               "  --nodes N      nodes in the job (only 1 so far)\n"
               "  --gpus N       plan over the first N GPUs of the node (default: all)\n"
               "  --op OP        allreduce (default), allgather, reducescatter, broadcast, reduce\n"
               "  -b, -e SIZE    smallest and largest size in bytes, K/M/G suffixes (default 8 and 16G)\n"
               "  -f FACTOR      multiply the size by FACTOR each row (default 2)\n"
               "  -d TYPE        float (default), double, half, bfloat16, int8, int32, int64\n"
               "  --algo ALGO    ring (the only algorithm modelled so far)\n"
               "  --proto PROTO  force the protocol (default: the model's choice)\n"
               "  --channels N   force the channel count (default: the model's choice)\n"
               "  --json         one JSON object per line: the rings, then one per size\n"
               "  --version      the collcomm version cc-plan runs with\n");
}

struct DtypeInfo {
  const char* name;
  size_t bytes;
};
constexpr DtypeInfo kDtypes[] = {{"float", 4}, {"double", 8}, {"half", 2}, {"bfloat16", 2},
                                 {"int8", 1},  {"int32", 4},  {"int64", 8}};

struct OpInfo {
  const char* name;
  CollKind kind;
};
constexpr OpInfo kOps[] = {{"allreduce", CollKind::kAllReduce},
                           {"allgather", CollKind::kAllGather},
                           {"reducescatter", CollKind::kReduceScatter},
                           {"broadcast", CollKind::kBroadcast},
                           {"reduce", CollKind::kReduce}};

// "8", "64K", "16G" (powers of 1024, as nccl-tests reads them) -> bytes; false when malformed.
bool parseSize(const std::string& s, size_t* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  else if (*end == 'T' || *end == 't')
    shift = 40;
  if (shift != 0) ++end;
  if (*end != '\0') return false;
  if (shift != 0 && v > (~0ULL >> shift)) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

bool parsePositiveInt(const std::string& s, int* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

// A string as a JSON string's contents: quotes, backslashes and control characters escaped.
std::string jsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

int usageError(const char* fmt, const std::string& what) {
  std::fprintf(stderr, "cc-plan: ");
  std::fprintf(stderr, fmt, what.c_str());
  std::fprintf(stderr, "\n(cc-plan --help lists the options)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string topoFile;
  int nodes = 1, gpus = -1, channels = -1, factor = 2;
  size_t minBytes = 8, maxBytes = size_t{16} << 30;
  const OpInfo* op = &kOps[0];
  const DtypeInfo* dtype = &kDtypes[0];
  int proto = -1;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool hasValue = i + 1 < argc;
    auto value = [&]() { return std::string(argv[++i]); };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      return ccPrintToolVersion("cc-plan");
    } else if (a == "--json") {
      json = true;
    } else if (!hasValue) {
      return usageError("unknown option or missing value: '%s'", a);
    } else if (a == "--topo") {
      topoFile = value();
    } else if (a == "--nodes") {
      if (!parsePositiveInt(value(), &nodes)) return usageError("--nodes takes a positive count, not '%s'", argv[i]);
    } else if (a == "--gpus") {
      if (!parsePositiveInt(value(), &gpus)) return usageError("--gpus takes a positive count, not '%s'", argv[i]);
    } else if (a == "--channels") {
      if (!parsePositiveInt(value(), &channels))
        return usageError("--channels takes a positive count, not '%s'", argv[i]);
    } else if (a == "-f" || a == "--stepfactor") {
      if (!parsePositiveInt(value(), &factor) || factor < 2)
        return usageError("-f takes a whole factor of at least 2, not '%s'", argv[i]);
    } else if (a == "-b" || a == "--minbytes" || a == "-e" || a == "--maxbytes") {
      const bool isMin = a == "-b" || a == "--minbytes";
      if (!parseSize(value(), isMin ? &minBytes : &maxBytes))
        return usageError("a size is bytes with an optional K, M, G or T suffix, not '%s'", argv[i]);
    } else if (a == "--op") {
      const std::string v = value();
      op = nullptr;
      for (const OpInfo& o : kOps)
        if (v == o.name) op = &o;
      if (op == nullptr)
        return usageError("--op takes allreduce, allgather, reducescatter, broadcast or reduce, not '%s'", v);
    } else if (a == "-d" || a == "--datatype") {
      const std::string v = value();
      dtype = nullptr;
      for (const DtypeInfo& d : kDtypes)
        if (v == d.name) dtype = &d;
      if (dtype == nullptr)
        return usageError("-d takes float, double, half, bfloat16, int8, int32 or int64, not '%s'", v);
    } else if (a == "--algo") {
      const std::string v = value();
      if (v == "tree") return usageError("--algo %s: trees are not modelled yet; use ring", v);
      if (v != "ring") return usageError("--algo takes ring (the only algorithm modelled so far), not '%s'", v);
    } else if (a == "--proto") {
      const std::string v = value();
      if (v == "ll" || v == "LL")
        proto = static_cast<int>(ModelProto::kLL);
      else if (v == "ll128" || v == "LL128")
        proto = static_cast<int>(ModelProto::kLL128);
      else if (v == "simple" || v == "Simple")
        proto = static_cast<int>(ModelProto::kSimple);
      else
        return usageError("--proto takes ll, ll128 or simple, not '%s'", v);
    } else {
      return usageError("unknown option '%s'", a);
    }
  }
  if (topoFile.empty()) return usageError("%s--topo FILE is required (a topology XML, as cc-topo reads)", "");
  if (nodes > 1)
    return usageError(
        "--nodes %s: multi-node jobs are not modelled yet (network rings and trees come next); "
        "use --nodes 1",
        std::to_string(nodes));
  if (minBytes > maxBytes) return usageError("%s-b must not exceed -e", "");

  TopoSystem sys;
  if (!isOk(loadTopologyFile(topoFile, &sys))) {
    std::fprintf(stderr, "cc-plan: %s\n", threadLastError().c_str());
    return 1;
  }
  if (gpus < 0) gpus = sys.count(NodeType::kGpu);
  SingleNodeRings rings;
  if (!isOk(singleNodeRings(sys, gpus, &rings))) {
    // A GPU count the file cannot give is the user's argument; a file without usable GPUs is input.
    std::fprintf(stderr, "cc-plan: %s\n", threadLastError().c_str());
    return sys.count(NodeType::kGpu) >= 2 ? 2 : 1;
  }
  const RingGraph& g = rings.graph;
  if (channels > g.maxChannels)
    return usageError("--channels %s is more than the rings this topology gives",
                      std::to_string(channels) + " (at most " + std::to_string(g.maxChannels) + ")");

  const bool reduces =
      op->kind == CollKind::kAllReduce || op->kind == CollKind::kReduce || op->kind == CollKind::kReduceScatter;
  const bool rooted = op->kind == CollKind::kBroadcast || op->kind == CollKind::kReduce;
  const bool perRank = op->kind == CollKind::kAllGather || op->kind == CollKind::kReduceScatter;
  // Sizes are whole elements, and for AllGather/ReduceScatter whole elements per rank (nccl-tests).
  const size_t unit = dtype->bytes * (perRank ? static_cast<size_t>(g.nRanks) : 1);

  if (json) {
    std::printf(
        "{\"topo\":\"%s\",\"nodes\":1,\"gpus\":%d,\"op\":\"%s\",\"algo\":\"Ring\",\"hop\":\"%s\","
        "\"ring_bw\":%.1f,\"max_channels\":%d,\"bw_per_channel\":%.1f,\"ring\":[",
        jsonEscape(topoFile).c_str(), g.nRanks, op->name, hopClassName(g.intraHop), rings.ringBw, g.maxChannels,
        g.bwPerChannel);
    for (size_t i = 0; i < rings.order.size(); ++i) std::printf("%s%d", i ? "," : "", rings.order[i]);
    std::printf("]}\n");
  } else {
    std::printf(
        "# cc-plan: %s, %d GPU(s), 1 node; ring hops over %s, ring bottleneck %.1f GB/s, "
        "up to %d channels of %.1f GB/s\n",
        topoFile.c_str(), g.nRanks, hopClassName(g.intraHop), rings.ringBw, g.maxChannels, g.bwPerChannel);
    std::printf("# predicted, not measured: time = latency + ring fill + bytes / bandwidth (docs/planning.md)\n");
    std::printf("#\n# %12s %12s %8s %6s %6s %10s %8s %8s  %-5s %-6s %4s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "algo", "proto", "#ch");
    std::printf("# %12s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  }
  ModelChoiceLimits limits;
  limits.proto = proto;
  limits.channels = channels;
  for (size_t size = minBytes; size <= maxBytes;) {
    const size_t bytes = size / unit * unit;
    if (bytes > 0) {
      const ModelChoice c = chooseByModel(g, op->kind, bytes, limits);
      const double algBw = static_cast<double>(bytes) / (c.cost.timeUs * 1e3);
      const double busBw = algBw * busBwFactor(op->kind, g.nRanks);
      const size_t count = bytes / dtype->bytes;
      const int root = rooted ? 0 : -1;
      if (json) {
        std::printf(
            "{\"size\":%zu,\"count\":%zu,\"type\":\"%s\",\"redop\":\"%s\",\"root\":%d,\"time_us\":%.2f,"
            "\"algbw\":%.2f,\"busbw\":%.2f,\"algo\":\"Ring\",\"proto\":\"%s\",\"channels\":%d,"
            "\"latency_us\":%.2f,\"fill_us\":%.2f,\"wire_us\":%.2f}\n",
            bytes, count, dtype->name, reduces ? "sum" : "none", root, c.cost.timeUs, algBw, busBw,
            modelProtoName(c.proto), c.channels, c.cost.latencyUs, c.cost.fillUs, c.cost.wireUs);
      } else {
        std::printf("  %12zu %12zu %8s %6s %6d %10.2f %8.2f %8.2f  %-5s %-6s %4d\n", bytes, count, dtype->name,
                    reduces ? "sum" : "none", root, c.cost.timeUs, algBw, busBw, "Ring", modelProtoName(c.proto),
                    c.channels);
      }
    }
    if (size > maxBytes / static_cast<size_t>(factor)) break;
    size *= static_cast<size_t>(factor);
  }
  return 0;
}
