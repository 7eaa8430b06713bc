// cc-plan --host (cc_plan_host.h): the library's plan and host-model estimate per size.
#include "cc_plan_host.h"

#include <cctype>
#include <cstdio>
#include <string>

#include "common/status.h"
#include "core/init.h"
#include "device/dtypes.h"
#include "plan/cost_model.h"
#include "plan/host_model.h"
#include "plan/plan.h"
#include "plan/tuner.h"

namespace collcomm::detail {
namespace {

int refuse(const std::string& sentence) {
  std::fprintf(stderr, "cc-plan: %s\n(cc-plan --help lists the options)\n", sentence.c_str());
  return 2;
}

// "OneShot" -> "oneshot", as the command line spells it.
std::string optionName(const char* name) {
  std::string s = name;
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

const char* ranksAre(const HostPlanJob& job) {
  if (job.hosts > 1) return "processes on several hosts";
  return job.processes ? "processes of one host" : "threads of one process";
}

// The choices the planner makes for `op` unless the row is the model's: then the least estimate
// among the plans the planner makes with each algorithm and protocol forced (those it does not run
// here, such as Direct across hosts, come back as something else and are passed over), within what
// the configuration forces. Ties keep the first of Ring, OneShot, Tree, Direct, then Simple, LL
// (hostModelChoice's order).
Plan choose(const TunerConfig& cfg, const PlanOp& op, const PlanShape& shape, HostLinkClass cls, bool byModel) {
  Plan best = planFor(cfg, op, shape);
  if (!byModel) return best;
  double bestUs = -1;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShot, Algorithm::kTree, Algorithm::kDirect}) {
    if (cfg.forcedAlgo >= 0 && static_cast<int>(a) != cfg.forcedAlgo) continue;
    for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
      if (cfg.forcedProto >= 0 && static_cast<int>(p) != cfg.forcedProto) continue;
      TunerConfig forced = cfg;
      forced.forcedAlgo = static_cast<int>(a);
      forced.forcedProto = static_cast<int>(p);
      const Plan candidate = planFor(forced, op, shape);
      if (candidate.algo != a || candidate.proto != p) continue;
      const double us = hostEstimateUs(candidate, cls);
      if (bestUs < 0 || us < bestUs) {
        best = candidate;
        bestUs = us;
      }
    }
  }
  return best;
}

}  // namespace

int printHostPlan(const HostPlanJob& job) {
  TunerConfig cfg;
  CommConfig comm;
  if (!isOk(loadTunerConfig(&cfg)) || !isOk(resolveConfig(nullptr, &comm))) {
    std::fprintf(stderr, "cc-plan: %s\n", threadLastError().c_str());
    return 1;
  }
  // More ranks on a host than its CPUs: the thresholds a communicator takes there (init.cc).
  const int ranksPerHost = (job.ranks + job.hosts - 1) / job.hosts;
  const bool oversubscribed = job.cpus > 0 && ranksPerHost > job.cpus;
  if (oversubscribed) tuneForOversubscribedHost(&cfg);
  if (job.algo >= 0) cfg.forcedAlgo = job.algo;
  if (job.proto >= 0) cfg.forcedProto = job.proto;
  const FifoSizes fifo = fifoSizesFromParams();

  PlanShape shape;
  shape.nranks = job.ranks;
  shape.nChannels = job.channels > 0 ? job.channels : comm.minChannels;
  // Direct reads the peers' buffers: threads of one process by plain copies, processes of one host
  // by cross-memory attach (assumed permitted, as the communicator's probe finds it on most hosts).
  shape.reach = job.hosts > 1 || job.ranks < 2 ? DirectReach::kNone
                : job.processes                ? DirectReach::kCrossProcess
                                               : DirectReach::kInProcess;
  shape.overNet = job.hosts > 1;
  shape.nHosts = job.hosts;
  shape.simpleStepBytes = job.simpleStepBytes > 0 ? job.simpleStepBytes : fifo.ring.simpleStepBytes;
  shape.llStepBytes = job.llStepBytes > 0 ? job.llStepBytes : fifo.ring.llStepLines * kLlBytesPerLine;
  const HostLinkClass cls = hostLinkClassOf(shape);

  const bool perRank = job.kind == CollKind::kAllGather || job.kind == CollKind::kReduceScatter;
  const bool rooted = job.kind == CollKind::kBroadcast || job.kind == CollKind::kReduce;
  const size_t elem = dtypeSize(job.dtype);
  // Sizes are whole elements, and for AllGather/ReduceScatter whole elements per rank (nccl-tests).
  const size_t unit = elem * (perRank ? static_cast<size_t>(job.ranks) : 1);
  auto opOf = [&](size_t bytes) { return PlanOp{job.kind, bytes / unit, job.dtype, 0}; };

  // A forced choice the planner does not make here would print rows of another algorithm.
  if (job.algo >= 0 || job.proto >= 0) {
    const Plan probe = planFor(cfg, opOf(unit), shape);
    if (job.algo >= 0 && static_cast<int>(probe.algo) != job.algo) {
      const std::string name = optionName(algorithmName(static_cast<Algorithm>(job.algo)));
      if (job.algo == static_cast<int>(Algorithm::kDirect))
        return refuse(
            "--algo direct reads the peers' buffers: allreduce, allgather, reducescatter or broadcast on "
            "2 or more ranks of one host, not " +
            std::string(job.opName) + " on " + std::to_string(job.ranks) + " rank(s) and " + std::to_string(job.hosts) +
            " host(s)");
      return refuse("--algo " + name + " runs allreduce on 2 or more ranks only, not " + job.opName + " on " +
                    std::to_string(job.ranks) + " rank(s)");
    }
    if (job.proto >= 0 && static_cast<int>(probe.proto) != job.proto)
      return refuse("--proto " + optionName(protocolName(static_cast<Protocol>(job.proto))) + " with --algo " +
                    optionName(algorithmName(probe.algo)) + ": " + algorithmName(probe.algo) +
                    " copies without FIFO steps and runs Simple only");
  }

  const char* choice = job.byModel ? "model" : "planner";
  if (job.json) {
    std::printf(
        "{\"host\":true,\"ranks\":%d,\"hosts\":%d,\"ranks_are\":\"%s\",\"link_class\":\"%s\",\"op\":\"%s\","
        "\"choice\":\"%s\",\"channels\":%d,\"simple_step\":%zu,\"ll_step\":%zu,\"oversubscribed\":%s}\n",
        job.ranks, job.hosts, ranksAre(job), hostLinkClassName(cls), job.opName, choice, shape.nChannels,
        shape.simpleStepBytes, shape.llStepBytes, oversubscribed ? "true" : "false");
  } else {
    std::printf("# cc-plan --host: %d rank(s), %s (link class %s), %d channel(s)\n", job.ranks, ranksAre(job),
                hostLinkClassName(cls), shape.nChannels);
    std::printf("# ring steps: Simple %zu B, LL %zu B\n", shape.simpleStepBytes, shape.llStepBytes);
    if (job.cpus > 0)
      std::printf("# %d CPU(s) a host for %d rank(s)%s\n", job.cpus, ranksPerHost,
                  oversubscribed ? ": oversubscribed, planned as the library plans there" : "");
    else
      std::printf("# a CPU per rank (--cpus sets fewer)\n");
    std::printf("# choice: %s\n", job.byModel ? "the host model's argmin over what the planner runs when forced"
                                              : "the planner's (plan/tuner.h; COLLCOMM_* settings apply)");
    std::printf("# predicted, not measured: the host model's estimate (plan/host_model.h, docs/planning.md)\n");
    std::printf("#\n# %12s %12s %8s %6s %6s %10s %8s %8s  %-7s %-6s %4s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "algo", "proto", "#ch");
    std::printf("# %12s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)");
  }
  for (size_t size = job.minBytes; size <= job.maxBytes;) {
    const size_t bytes = size / unit * unit;
    if (bytes > 0) {
      const Plan plan = choose(cfg, opOf(bytes), shape, cls, job.byModel);
      const double us = hostEstimateUs(plan, cls);
      const double algBw = static_cast<double>(bytes) / (us * 1e3);
      const double busBw = algBw * busBwFactor(job.kind, job.ranks);
      const size_t count = bytes / elem;
      const char* redop = collReduces(job.kind) ? "sum" : "none";
      const int root = rooted ? 0 : -1;
      if (job.json)
        std::printf(
            "{\"size\":%zu,\"count\":%zu,\"type\":\"%s\",\"redop\":\"%s\",\"root\":%d,\"time_us\":%.3f,"
            "\"algbw\":%.2f,\"busbw\":%.2f,\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d}\n",
            bytes, count, job.typeName, redop, root, us, algBw, busBw, algorithmName(plan.algo),
            protocolName(plan.proto), plan.nChannels);
      else
        std::printf("  %12zu %12zu %8s %6s %6d %10.2f %8.2f %8.2f  %-7s %-6s %4d\n", bytes, count, job.typeName, redop,
                    root, us, algBw, busBw, algorithmName(plan.algo), protocolName(plan.proto), plan.nChannels);
    }
    if (size > job.maxBytes / job.factor) break;
    size *= job.factor;
  }
  return 0;
}

}  // namespace collcomm::detail
