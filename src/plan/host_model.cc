// The host cost model (host_model.h): the constants, measured, and the algorithms' shapes.
#include "plan/host_model.h"

#include <algorithm>
#include <cmath>

#include "collectives/coll_work.h"

namespace collcomm::detail {
namespace {

// Fitted by perf/calibrate/host_model.sh on the 2-vCPU development VM (AMD EPYC Zen 4, 32 MiB L3),
// two ranks per class, fastest of 6 repetitions (two runs, 2026-11-27 20:59 and 21:01 UTC, on a
// quiet machine: load 2-3 from the runs themselves); each throughput is {below
// kHostModelCacheSplitBytes, from it up}. The measured and modelled time of every point are in
// docs/lab/2026-11-27.md ("The host model's step term"). A floor of 0.05 us marks a hand-off the
// fit found no time for, a step cost of 0 one the points did not ask for (within a point of the
// least worst error without it: the rate stands in for steps that grow with the bytes); LL was
// measured up to 256 KiB only (never planned beyond), so its one rate stands for both. The steps
// were 128 KiB (Simple; 126.3 KiB over NET) and 4 KiB (LL): only LL's steps, over NET, cost.
constexpr HostLinkConstants kHostConstants[kHostLinkClassCount] = {
    // opUs  hopUs{Simple, LL}  stepUs{Simple, LL}  bytesPerUs{Simple, LL}  oneShot  direct  p2p
    {0.50, {0.05, 0.05}, {0, 0}, {{18423, 9140}, {778, 778}}, {14675, 6189}, {21335, 7637}, {15189, 6082}},  // threads
    {0.34, {0.05, 0.05}, {0, 0}, {{18624, 8993}, {805, 805}}, {15048, 6836}, {8429, 3350}, {18805, 6145}},  // processes
    {1.98, {5.99, 6.23}, {0, 6.14}, {{4032, 2810}, {633, 633}}, {3818, 2599}, {0, 0}, {3441, 2083}},  // NET (loopback)
};

// Hand-offs in sequence and bytes through one rank (sent or received, the larger) of a ring
// collective on n ranks; bytes as nccl-tests count them (AllGather, ReduceScatter: every rank's part).
struct Shape {
  double hops;
  double rankBytes;
};

Shape ringShape(CollKind kind, double bytes, int n) {
  const double share = static_cast<double>(n - 1) / n;
  switch (kind) {
    case CollKind::kAllReduce: return {2.0 * (n - 1), 2.0 * share * bytes};
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return {double(n - 1), share * bytes};
    case CollKind::kBroadcast:
    case CollKind::kReduce: return {double(n - 1), bytes};
    default: return {double(n - 1), bytes};
  }
}

// The deepest rank of a double binary tree over n ranks (one rank per host; chains inside hosts
// are not told apart here): log2 n levels.
double treeDepth(int n) { return std::ceil(std::log2(static_cast<double>(n))); }

// Steps a slice of `bytes` takes: at least one (a hand-off moves a step even when it is empty).
double stepsOf(double bytes, double step) { return std::max(1.0, std::ceil(bytes / step)); }

}  // namespace

const char* hostLinkClassName(HostLinkClass c) {
  switch (c) {
    case HostLinkClass::kThreads: return "threads";
    case HostLinkClass::kProcesses: return "processes";
    case HostLinkClass::kNet: break;
  }
  return "net";
}

HostLinkClass hostLinkClassOf(const PlanShape& shape) {
  if (shape.overNet) return HostLinkClass::kNet;
  return shape.reach == DirectReach::kInProcess ? HostLinkClass::kThreads : HostLinkClass::kProcesses;
}

const HostLinkConstants& hostLinkConstants(HostLinkClass c) { return kHostConstants[static_cast<int>(c)]; }

double hostEstimateUs(const Plan& plan, HostLinkClass c) {
  return hostEstimateCollUs(plan.kind, plan.algo, plan.proto, plan.bytes, plan.nranks, c, plan.stepBytes);
}

double hostFurtherSteps(CollKind kind, Algorithm algo, size_t size, int n, size_t stepBytes) {
  if (n <= 1 || stepBytes == 0 || talksToEveryPeer(algo, n)) return 0;
  const double bytes = static_cast<double>(size);
  const double step = static_cast<double>(stepBytes);
  const double chunk = step * static_cast<double>(kChunkSteps);
  switch (algo) {
    case Algorithm::kOneShot:
      return stepsOf(bytes, step) - 1;  // two ranks: the whole input, one hand-off
    case Algorithm::kTree:
      return 2 * (stepsOf(bytes, step) - 1);  // the message up, then down
    default:
      break;
  }
  switch (kind) {
    case CollKind::kAllReduce: {
      // Rounds of n chunks, each cut in n slices; a rank sends 2(n-1) slices a round.
      const double round = n * chunk;
      const double full = std::floor(bytes / round);
      const double rest = bytes - full * round;
      const double restSteps = rest > 0 ? stepsOf(std::ceil(rest / n), step) : 0;
      return std::max(0.0, 2.0 * (n - 1) * (full * kChunkSteps + restSteps) - 2.0 * (n - 1));
    }
    case CollKind::kAllGather:
    case CollKind::kReduceScatter:
      // Each rank's part forwarded n-1 times.
      return (n - 1) * (stepsOf(bytes / n, step) - 1);
    default:
      return stepsOf(bytes, step) - 1;  // Broadcast, Reduce: the whole message through every rank
  }
}

double hostEstimateCollUs(CollKind kind, Algorithm algo, Protocol protocol, size_t size, int n, HostLinkClass c,
                          size_t stepBytes) {
  const HostLinkConstants& k = hostLinkConstants(c);
  if (n <= 1) return k.opUs;  // a local copy, if any, is below the model's resolution
  const double bytes = static_cast<double>(size);
  const int proto = protocol == Protocol::kLL ? 1 : 0;
  const Shape ring = ringShape(kind, bytes, n);
  const double stepsUs = hostFurtherSteps(kind, algo, size, n, stepBytes) * k.stepUs[proto];
  // Whether the message fits in cache decides every rate of this operation.
  const double ringRate = k.bytesPerUs[proto].at(bytes);
  switch (algo) {
    case Algorithm::kOneShot: {
      const double oneShotRate = k.oneShotBytesPerUs.at(bytes);
      if (n == 2) return k.opUs + k.hopUs[proto] + stepsUs + bytes / oneShotRate;
      // Every input to every peer at once, then n inputs reduced: the sends share one rank's link.
      return k.opUs + k.hopUs[0] + (n - 1) * bytes / k.bytesPerUs[0].at(bytes) + n * bytes / oneShotRate;
    }
    case Algorithm::kDirect: {
      // A descriptor exchange and a "done" exchange around the copies; AllReduce adds "ready"
      // between its halves. Where Direct was not measured (NET: never planned), the ring's rate.
      const double tokens = kind == CollKind::kAllReduce ? 3 : 2;
      const double direct = k.directBytesPerUs.at(bytes);
      const double rate = direct > 0 ? direct : k.bytesPerUs[0].at(bytes);
      return k.opUs + tokens * k.hopUs[0] + ring.rankBytes / rate;
    }
    case Algorithm::kTree:
      // Up the tree and down again, each pipelined: the whole message through every inner rank twice.
      return k.opUs + 2 * treeDepth(n) * k.hopUs[proto] + stepsUs + 2 * bytes / ringRate;
    case Algorithm::kRing: break;
  }
  return k.opUs + ring.hops * k.hopUs[proto] + stepsUs + ring.rankBytes / ringRate;
}

HostModelChoice hostModelChoice(CollKind kind, size_t bytes, int nranks, HostLinkClass c, int forcedAlgo,
                                int forcedProto, HostStepBytes steps) {
  const bool algorithms = kind == CollKind::kAllReduce && nranks > 2;
  HostModelChoice best{Algorithm::kRing, Protocol::kSimple};
  double bestUs = -1;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShot, Algorithm::kTree}) {
    if (forcedAlgo >= 0 ? static_cast<int>(a) != forcedAlgo : a != Algorithm::kRing && !algorithms) continue;
    for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
      if (forcedProto >= 0 && static_cast<int>(p) != forcedProto) continue;
      const double us = hostEstimateCollUs(kind, a, p, bytes, nranks, c, p == Protocol::kLL ? steps.ll : steps.simple);
      if (bestUs < 0 || us < bestUs) {
        best = {a, p};
        bestUs = us;
      }
    }
  }
  // A forced choice the search did not cover (Direct) stays as forced.
  if (bestUs < 0) {
    if (forcedAlgo >= 0) best.algo = static_cast<Algorithm>(forcedAlgo);
    if (forcedProto >= 0) best.proto = static_cast<Protocol>(forcedProto);
  }
  return best;
}

double hostEstimateP2pUs(size_t sendBytes, size_t recvBytes, HostLinkClass c) {
  const HostLinkConstants& k = hostLinkConstants(c);
  const double most = static_cast<double>(sendBytes > recvBytes ? sendBytes : recvBytes);
  return k.opUs + (most > 0 ? k.hopUs[0] : 0) + most / k.p2pBytesPerUs.at(most);
}

}  // namespace collcomm::detail
