// The host cost model (host_model.h): the constants, measured, and the algorithms' shapes.
#include "plan/host_model.h"

#include <algorithm>
#include <cmath>

namespace collcomm::detail {
namespace {

// Fitted by perf/calibrate/host_model.sh on the 2-vCPU development VM (AMD EPYC Zen 4, 32 MiB L3),
// two ranks per class, fastest of 6 repetitions (two runs, 2026-11-27 18:40 and 18:43 UTC, on a
// quiet machine: load 3 from the runs themselves); each throughput is {below
// kHostModelCacheSplitBytes, from it up}. The measured and modelled time of every point are in
// docs/lab/2026-11-27.md ("The host model's cache term"). A floor of 0.05 us marks a hand-off the
// fit found no time for; LL was measured up to 256 KiB only (never planned beyond), so its one
// rate stands for both.
constexpr HostLinkConstants kHostConstants[kHostLinkClassCount] = {
    // opUs  hopUs{Simple, LL}  bytesPerUs{Simple, LL}  oneShot  direct  p2p
    {0.57, {0.05, 0.05}, {{18996, 8741}, {781, 781}}, {12904, 5557}, {17974, 7848}, {18658, 5327}},  // threads
    {0.34, {0.05, 0.05}, {{18482, 8912}, {812, 812}}, {14999, 5733}, {8175, 3051}, {17575, 5688}},   // processes
    {2.32, {5.93, 5.80}, {{3739, 2809}, {327, 327}}, {3399, 2472}, {0, 0}, {3433, 1892}},  // NET (loopback sockets)
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
  return hostEstimateCollUs(plan.kind, plan.algo, plan.proto, plan.bytes, plan.nranks, c);
}

double hostEstimateCollUs(CollKind kind, Algorithm algo, Protocol protocol, size_t size, int n, HostLinkClass c) {
  const HostLinkConstants& k = hostLinkConstants(c);
  if (n <= 1) return k.opUs;  // a local copy, if any, is below the model's resolution
  const double bytes = static_cast<double>(size);
  const int proto = protocol == Protocol::kLL ? 1 : 0;
  const Shape ring = ringShape(kind, bytes, n);
  // Whether the message fits in cache decides every rate of this operation.
  const double ringRate = k.bytesPerUs[proto].at(bytes);
  switch (algo) {
    case Algorithm::kOneShot: {
      const double oneShotRate = k.oneShotBytesPerUs.at(bytes);
      if (n == 2) return k.opUs + k.hopUs[proto] + bytes / oneShotRate;
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
      return k.opUs + 2 * treeDepth(n) * k.hopUs[proto] + 2 * bytes / ringRate;
    case Algorithm::kRing: break;
  }
  return k.opUs + ring.hops * k.hopUs[proto] + ring.rankBytes / ringRate;
}

HostModelChoice hostModelChoice(CollKind kind, size_t bytes, int nranks, HostLinkClass c, int forcedAlgo,
                                int forcedProto) {
  const bool algorithms = kind == CollKind::kAllReduce && nranks > 2;
  HostModelChoice best{Algorithm::kRing, Protocol::kSimple};
  double bestUs = -1;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShot, Algorithm::kTree}) {
    if (forcedAlgo >= 0 ? static_cast<int>(a) != forcedAlgo : a != Algorithm::kRing && !algorithms) continue;
    for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
      if (forcedProto >= 0 && static_cast<int>(p) != forcedProto) continue;
      const double us = hostEstimateCollUs(kind, a, p, bytes, nranks, c);
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
