// cc-plan: predicts, without running anything, what a collective sweep would measure on a machine
// described by a topology file: nccl-tests' columns (size, count, type, redop, root, time, algbw,
// busbw) from the cost model (plan/cost_model.h) on the channels the topology gives
// (plan/ring_channels.h) for N identical nodes, with the algorithm (Ring or Tree), protocol and
// channels the model chose. Nothing here grows with the node count but the numbers: a job of
// 100,000 ranks plans as fast as one node, and the JSON lists rings per node segment and trees only
// up to kMaxListedRanks ranks. --host plans a host communicator instead (cc_plan_host.h): the
// library's own planner and host cost model, per size.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cc_plan_host.h"
#include "common/status.h"
#include "plan/cost_model.h"
#include "plan/ring_channels.h"
#include "plan/trees.h"
#include "topo/topo.h"
#include "version_text.h"

using namespace collcomm::detail;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: cc-plan --topo FILE [--nodes N] [--gpus N] [--op OP] [-b MIN] [-e MAX] [-f FACTOR]\n"
               "               [-d TYPE] [--algo ring|tree] [--proto ll|ll128|simple] [--channels N] [--json]\n"
               "       cc-plan --host [--ranks N] [--hosts N] [--processes] [--cpus N] [--choose planner|model]\n"
               "               [--op OP] [-b MIN] [-e MAX] [-f FACTOR] [-d TYPE] [--algo ring|oneshot|tree|direct]\n"
               "               [--proto ll|simple] [--channels N] [--simple-step SIZE] [--ll-step SIZE] [--json]\n"
               "  --topo FILE    NCCL-format topology XML of one node (as cc-topo reads)\n"
               "  --nodes N      identical nodes in the job, their NICs on one network (default 1)\n"
               "  --gpus N       plan over the first N GPUs of each node (default: all)\n"
               "  --host         plan a host communicator: the library's planner and host cost model\n"
               "  --ranks N      its ranks (default 2)\n"
               "  --hosts N      the hosts they are on, joined by NET (default 1)\n"
               "  --processes    on one host, ranks are processes (default: threads of one process)\n"
               "  --cpus N       CPUs each host has for its ranks (default: one per rank); fewer than its\n"
               "                 ranks plans as the library does on an oversubscribed host\n"
               "  --choose WHO   planner (default): what the library runs; model: the host model's argmin\n"
               "  --simple-step, --ll-step SIZE  the ring's step payloads (default: COLLCOMM_BUFFSIZE's)\n"
               "  --op OP        allreduce (default), allgather, reducescatter, broadcast, reduce\n"
               "  -b, -e SIZE    smallest and largest size in bytes, K/M/G suffixes (default 8 and 16G)\n"
               "  -f FACTOR      multiply the size by FACTOR each row (default 2)\n"
               "  -d TYPE        float (default), double, half, bfloat16, int8, int32, int64\n"
               "  --algo ALGO    force the algorithm (tree, oneshot: allreduce only; oneshot, direct: --host)\n"
               "  --proto PROTO  force the protocol (ll128: GPU only; default: the model's or planner's choice)\n"
               "  --channels N   force the channel count (default: the model's choice; --host: as connected)\n"
               "  --json         one JSON object per line: the channels or communicator, then one per size\n"
               "  --version      the collcomm version cc-plan runs with\n");
}

struct DtypeInfo {
  const char* name;
  size_t bytes;
  ccDataType_t type;
};
constexpr DtypeInfo kDtypes[] = {{"float", 4, ccFloat},       {"double", 8, ccDouble}, {"half", 2, ccHalf},
                                 {"bfloat16", 2, ccBfloat16}, {"int8", 1, ccInt8},     {"int32", 4, ccInt32},
                                 {"int64", 8, ccInt64}};

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

// Above this many ranks the JSON gives the trees' shape (node count, depth) instead of every rank's
// parent: the listing would be megabytes, and the model needs none of it.
constexpr int kMaxListedRanks = 1024;

const char* algoName(Algorithm a) { return a == Algorithm::kTree ? "Tree" : "Ring"; }

size_t railCount(const ClusterRings& r) {
  std::vector<int> nets;
  for (const RailSegment& s : r.segments)
    if (std::find(nets.begin(), nets.end(), s.net) == nets.end()) nets.push_back(s.net);
  return nets.size();
}

// Levels below the root of the node-level binary tree over nNodes nodes (the first of the pair;
// the second is its mirror or shift, of the same depth), walking each node up: O(N log N), no array.
int hostTreeDepth(int nNodes) {
  int depth = 0;
  for (int h = 0; h < nNodes; ++h) {
    int d = 0;
    for (int at = h; hostTreeNode(nNodes, at, false).parent >= 0; at = hostTreeNode(nNodes, at, false).parent) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

// The first JSON line: the job, its channels (one ring segment per channel, the same on every node:
// node k's rank for GPU i is k x gpus + i), and for AllReduce the two trees (every rank's parent up
// to kMaxListedRanks ranks, else their shape).
void printChannelsJson(const TopoSystem& sys, const std::string& topoFile, const char* opName,
                       const ClusterRings& rings, int algo, bool listTrees) {
  const RingGraph& g = rings.graph;
  const int gpus = rings.node.graph.nRanks;
  std::printf(
      "{\"topo\":\"%s\",\"nodes\":%d,\"gpus\":%d,\"ranks\":%d,\"op\":\"%s\",\"algo\":\"%s\",\"hop\":\"%s\","
      "\"ring_bw\":%.1f,\"max_channels\":%d,\"bw_per_channel\":%.1f,\"ring\":[",
      jsonEscape(topoFile).c_str(), rings.nNodes, gpus, g.nRanks, opName,
      algo < 0 ? "model" : algoName(static_cast<Algorithm>(algo)), hopClassName(g.intraHop), rings.node.ringBw,
      g.maxChannels, g.bwPerChannel);
  for (size_t i = 0; i < rings.node.order.size(); ++i) std::printf("%s%d", i ? "," : "", rings.node.order[i]);
  std::printf("]");
  if (rings.nNodes > 1) {
    std::printf(
        ",\"nic_bw\":%.1f,\"gpu_nic_bw\":%.1f,\"net_crossings_per_channel\":%d,\"rank_of\":\"node*%d+gpu\","
        "\"channels\":[",
        rings.nicBw, rings.gpuNicBw, rings.nNodes, gpus);
    for (size_t c = 0; c < rings.segments.size(); ++c) {
      const RailSegment& s = rings.segments[c];
      std::printf("%s{\"net\":\"%s\",\"gpus\":[", c ? "," : "",
                  jsonEscape(sys.nodes(NodeType::kNet)[s.net].net.name).c_str());
      for (size_t i = 0; i < s.gpus.size(); ++i) std::printf("%s%d", i ? "," : "", s.gpus[i]);
      std::printf("]}");
    }
    std::printf("]");
  }
  if (listTrees) {
    std::vector<RankPlace> places(static_cast<size_t>(g.nRanks));
    for (int r = 0; r < g.nRanks; ++r) places[r] = RankPlace{static_cast<uint64_t>(r / gpus), static_cast<uint64_t>(r)};
    const std::vector<RankTree> trees = planTrees(places, std::min(g.maxChannels, 2));
    std::printf(",\"trees\":[");
    for (size_t t = 0; t < trees.size(); ++t) {
      std::printf("%s{\"root\":%d,\"parent\":[", t ? "," : "", trees[t].root);
      for (size_t r = 0; r < trees[t].node.size(); ++r) std::printf("%s%d", r ? "," : "", trees[t].node[r].parent);
      std::printf("]}");
    }
    std::printf("]");
  } else if (std::string(opName) == "allreduce") {
    std::printf(
        ",\"trees\":null,\"trees_elided\":\"%d ranks: above %d the per-rank listing is left out\","
        "\"tree_chain\":%d,\"tree_node_depth\":%d",
        g.nRanks, kMaxListedRanks, gpus, hostTreeDepth(rings.nNodes));
  }
  std::printf("}\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string topoFile;
  int nodes = 1, gpus = -1, channels = -1, factor = 2;
  size_t minBytes = 8, maxBytes = size_t{16} << 30;
  const OpInfo* op = &kOps[0];
  const DtypeInfo* dtype = &kDtypes[0];
  int proto = -1;
  int algo = -1;
  bool json = false;
  // --host and what only it reads; the first option given of each mode, to refuse a mix.
  HostPlanJob host;
  bool hostMode = false;
  std::string gpuOption, hostOption;
  auto given = [](std::string* first, const std::string& option) {
    if (first->empty()) *first = option;
  };
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
    } else if (a == "--host") {
      hostMode = true;
    } else if (a == "--processes") {
      host.processes = true;
      given(&hostOption, a);
    } else if (!hasValue) {
      return usageError("unknown option or missing value: '%s'", a);
    } else if (a == "--topo") {
      topoFile = value();
      given(&gpuOption, a);
    } else if (a == "--nodes") {
      if (!parsePositiveInt(value(), &nodes)) return usageError("--nodes takes a positive count, not '%s'", argv[i]);
      given(&gpuOption, a);
    } else if (a == "--gpus") {
      if (!parsePositiveInt(value(), &gpus)) return usageError("--gpus takes a positive count, not '%s'", argv[i]);
      given(&gpuOption, a);
    } else if (a == "--ranks") {
      if (!parsePositiveInt(value(), &host.ranks))
        return usageError("--ranks takes a positive count, not '%s'", argv[i]);
      given(&hostOption, a);
    } else if (a == "--cpus") {
      if (!parsePositiveInt(value(), &host.cpus)) return usageError("--cpus takes a positive count, not '%s'", argv[i]);
      given(&hostOption, a);
    } else if (a == "--hosts") {
      if (!parsePositiveInt(value(), &host.hosts))
        return usageError("--hosts takes a positive count, not '%s'", argv[i]);
      given(&hostOption, a);
    } else if (a == "--choose") {
      const std::string v = value();
      if (v != "planner" && v != "model")
        return usageError("--choose takes planner (what the library runs) or model (the host model's argmin), not '%s'",
                          v);
      host.byModel = v == "model";
      given(&hostOption, a);
    } else if (a == "--simple-step" || a == "--ll-step") {
      size_t* step = a == "--simple-step" ? &host.simpleStepBytes : &host.llStepBytes;
      if (!parseSize(value(), step) || *step == 0)
        return usageError("a step is a positive size in bytes with an optional K or M suffix, not '%s'", argv[i]);
      given(&hostOption, a);
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
      if (v == "ring" || v == "Ring")
        algo = static_cast<int>(Algorithm::kRing);
      else if (v == "tree" || v == "Tree")
        algo = static_cast<int>(Algorithm::kTree);
      else if (v == "oneshot" || v == "OneShot")
        algo = static_cast<int>(Algorithm::kOneShot);
      else if (v == "direct" || v == "Direct")
        algo = static_cast<int>(Algorithm::kDirect);
      else
        return usageError("--algo takes ring, tree, oneshot or direct (NVLS and CollNet are not modelled), not '%s'",
                          v);
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
  if (minBytes > maxBytes) return usageError("%s-b must not exceed -e", "");
  if (hostMode) {
    if (!gpuOption.empty())
      return usageError("%s reads GPU nodes from a topology file; --host plans a host communicator without one",
                        gpuOption);
    if (host.hosts > host.ranks)
      return usageError(
          "--hosts %s: every host has at least one rank",
          std::to_string(host.hosts) + " is more hosts than --ranks " + std::to_string(host.ranks) + " gives");
    if (host.processes && host.hosts > 1)
      return usageError("%s: ranks on several hosts are processes already (--processes is for one host)",
                        "--processes with --hosts " + std::to_string(host.hosts));
    if (proto == static_cast<int>(ModelProto::kLL128))
      return usageError("%s is a GPU protocol; host communicators run ll or simple", "--proto ll128");
    if (channels > 64) return usageError("--channels %s: a communicator connects at most 64", std::to_string(channels));
    host.kind = op->kind;
    host.opName = op->name;
    host.dtype = dtype->type;
    host.typeName = dtype->name;
    host.algo = algo;
    host.proto = proto < 0                                    ? -1
                 : proto == static_cast<int>(ModelProto::kLL) ? static_cast<int>(Protocol::kLL)
                                                              : static_cast<int>(Protocol::kSimple);
    host.channels = channels;
    host.minBytes = minBytes;
    host.maxBytes = maxBytes;
    host.factor = static_cast<size_t>(factor);
    host.json = json;
    return printHostPlan(host);
  }
  if (!hostOption.empty())
    return usageError("%s describes a host communicator: add --host (GPU nodes take --topo, --nodes and --gpus)",
                      hostOption);
  if (algo == static_cast<int>(Algorithm::kOneShot) || algo == static_cast<int>(Algorithm::kDirect))
    return usageError("--algo %s is a host communicator's algorithm (add --host); the GPU model plans ring or tree",
                      std::string(algo == static_cast<int>(Algorithm::kDirect) ? "direct" : "oneshot"));
  if (topoFile.empty()) return usageError("%s--topo FILE is required (a topology XML, as cc-topo reads)", "");
  if (algo >= 0 && !modelHasAlgo(static_cast<Algorithm>(algo), op->kind))
    return usageError("--algo tree models allreduce only, not %s (use ring)", op->name);

  TopoSystem sys;
  if (!isOk(loadTopologyFile(topoFile, &sys))) {
    std::fprintf(stderr, "cc-plan: %s\n", threadLastError().c_str());
    return 1;
  }
  if (gpus < 0) gpus = sys.count(NodeType::kGpu);
  ClusterRings rings;
  if (!isOk(clusterRings(sys, gpus, nodes, &rings))) {
    // A GPU count the file cannot give is the user's argument; a file without usable GPUs is input.
    std::fprintf(stderr, "cc-plan: %s\n", threadLastError().c_str());
    return sys.count(NodeType::kGpu) >= 2 ? 2 : 1;
  }
  const RingGraph& g = rings.graph;
  if (channels > g.maxChannels)
    return usageError("--channels %s is more than the channels this job gets",
                      std::to_string(channels) + " (at most " + std::to_string(g.maxChannels) + ")");

  const bool reduces =
      op->kind == CollKind::kAllReduce || op->kind == CollKind::kReduce || op->kind == CollKind::kReduceScatter;
  const bool rooted = op->kind == CollKind::kBroadcast || op->kind == CollKind::kReduce;
  const bool perRank = op->kind == CollKind::kAllGather || op->kind == CollKind::kReduceScatter;
  // Sizes are whole elements, and for AllGather/ReduceScatter whole elements per rank (nccl-tests).
  const size_t unit = dtype->bytes * (perRank ? static_cast<size_t>(g.nRanks) : 1);

  if (json) {
    printChannelsJson(sys, topoFile, op->name, rings, algo,
                      g.nRanks <= kMaxListedRanks && modelHasAlgo(Algorithm::kTree, op->kind));
  } else {
    std::printf(
        "# cc-plan: %s, %d GPU(s) per node, %d node(s), %d ranks; hops in a node over %s, node ring "
        "bottleneck %.1f GB/s\n",
        topoFile.c_str(), gpus, nodes, g.nRanks, hopClassName(g.intraHop), rings.node.ringBw);
    if (nodes > 1)
      std::printf(
          "# across nodes: %zu NIC rail(s) of %.1f GB/s (GPU-NIC path %.1f GB/s), ring crosses the network "
          "%d times per channel\n",
          railCount(rings), rings.nicBw, rings.gpuNicBw, nodes);
    std::printf("# up to %d channels of %.1f GB/s\n", g.maxChannels, g.bwPerChannel);
    std::printf("# predicted, not measured: time = latency + ring fill + bytes / bandwidth (docs/planning.md)\n");
    std::printf("#\n# %12s %12s %8s %6s %6s %10s %8s %8s  %-5s %-6s %4s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "algo", "proto", "#ch");
    std::printf("# %12s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  }
  ModelChoiceLimits limits;
  limits.algo = algo;
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
            "\"algbw\":%.2f,\"busbw\":%.2f,\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,"
            "\"latency_us\":%.2f,\"fill_us\":%.2f,\"wire_us\":%.2f}\n",
            bytes, count, dtype->name, reduces ? "sum" : "none", root, c.cost.timeUs, algBw, busBw, algoName(c.algo),
            modelProtoName(c.proto), c.channels, c.cost.latencyUs, c.cost.fillUs, c.cost.wireUs);
      } else {
        std::printf("  %12zu %12zu %8s %6s %6d %10.2f %8.2f %8.2f  %-5s %-6s %4d\n", bytes, count, dtype->name,
                    reduces ? "sum" : "none", root, c.cost.timeUs, algBw, busBw, algoName(c.algo),
                    modelProtoName(c.proto), c.channels);
      }
    }
    if (size > maxBytes / static_cast<size_t>(factor)) break;
    size *= static_cast<size_t>(factor);
  }
  return 0;
}
