// The host cost model's structure (plan/host_model.h): each algorithm's hand-offs and bytes per
// rank, checked against the constants in use, so a recalibration changes no expectation here.
#include <gtest/gtest.h>

#include <cmath>

#include "plan/host_model.h"

namespace collcomm::detail {
namespace {

Plan plan(CollKind kind, Algorithm algo, Protocol proto, size_t bytes, int nranks, size_t stepBytes = 0) {
  Plan p{};
  p.kind = kind;
  p.algo = algo;
  p.proto = proto;
  p.bytes = bytes;
  p.nranks = nranks;
  p.nChannels = 1;
  p.stepBytes = stepBytes;
  return p;
}

TEST(HostModel, LinkClassFromTheShape) {
  PlanShape s;
  s.reach = DirectReach::kInProcess;
  EXPECT_EQ(hostLinkClassOf(s), HostLinkClass::kThreads);
  s.reach = DirectReach::kCrossProcess;
  EXPECT_EQ(hostLinkClassOf(s), HostLinkClass::kProcesses);
  s.reach = DirectReach::kNone;  // processes without cross-memory attach
  EXPECT_EQ(hostLinkClassOf(s), HostLinkClass::kProcesses);
  s.overNet = true;
  EXPECT_EQ(hostLinkClassOf(s), HostLinkClass::kNet);
  s.reach = DirectReach::kInProcess;  // any NET connection makes the slowest link NET
  EXPECT_EQ(hostLinkClassOf(s), HostLinkClass::kNet);
}

TEST(HostModel, RingHandOffsAndBytesPerRank) {
  for (int c = 0; c < kHostLinkClassCount; ++c) {
    const auto cls = static_cast<HostLinkClass>(c);
    const HostLinkConstants& k = hostLinkConstants(cls);
    const double mib = 1 << 20;
    for (int n : {2, 3, 8}) {
      // AllReduce: 2(n-1) hand-offs, 2(n-1)/n of the message through each rank.
      EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 1 << 20, n), cls),
                  k.opUs + 2 * (n - 1) * k.hopUs[0] + 2.0 * (n - 1) / n * mib / k.bytesPerUs[0].inCache, 1e-9);
      // AllGather: n-1 hand-offs, (n-1)/n; Broadcast: n-1 hand-offs, the whole message.
      EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllGather, Algorithm::kRing, Protocol::kLL, 1 << 20, n), cls),
                  k.opUs + (n - 1) * k.hopUs[1] + 1.0 * (n - 1) / n * mib / k.bytesPerUs[1].inCache, 1e-9);
      EXPECT_NEAR(hostEstimateUs(plan(CollKind::kBroadcast, Algorithm::kRing, Protocol::kSimple, 1 << 20, n), cls),
                  k.opUs + (n - 1) * k.hopUs[0] + mib / k.bytesPerUs[0].inCache, 1e-9);
    }
    // One rank: nothing but the call.
    EXPECT_EQ(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 1 << 20, 1), cls), k.opUs);
  }
}

TEST(HostModel, TreeLatencyGrowsWithLogRanksAndRingsWithRanks) {
  const auto cls = HostLinkClass::kNet;
  auto ring = [&](int n) { return hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 8, n), cls); };
  auto tree = [&](int n) { return hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 8, n), cls); };
  const double hop = hostLinkConstants(cls).hopUs[0];
  EXPECT_NEAR(ring(64) - ring(32), 64 * hop, 1e-2);  // 2 hand-offs per added rank (8 bytes: the rest is noise)
  EXPECT_NEAR(tree(64) - tree(32), 2 * hop, 1e-6);   // one level more, up and down
  EXPECT_LT(tree(64), ring(64));
}

TEST(HostModel, OneShotDirectAndPointToPoint) {
  const auto cls = HostLinkClass::kProcesses;
  const HostLinkConstants& k = hostLinkConstants(cls);
  const double b = 65536;
  // Two-rank one-shot: one hand-off, one input sent and two reduced.
  EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kOneShot, Protocol::kSimple, 65536, 2), cls),
              k.opUs + k.hopUs[0] + b / k.oneShotBytesPerUs.inCache, 1e-9);
  // More ranks: the inputs of n-1 peers come in, n are reduced.
  EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kOneShot, Protocol::kSimple, 65536, 4), cls),
              k.opUs + k.hopUs[0] + 3 * b / k.bytesPerUs[0].inCache + 4 * b / k.oneShotBytesPerUs.inCache, 1e-9);
  // Direct AllReduce: three token exchanges; the others two.
  EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kDirect, Protocol::kSimple, 65536, 2), cls),
              k.opUs + 3 * k.hopUs[0] + b / k.directBytesPerUs.inCache, 1e-9);
  EXPECT_NEAR(hostEstimateUs(plan(CollKind::kBroadcast, Algorithm::kDirect, Protocol::kSimple, 65536, 2), cls),
              k.opUs + 2 * k.hopUs[0] + b / k.directBytesPerUs.inCache, 1e-9);
  // A point-to-point batch: its larger direction, one hand-off; nothing moved, only the call.
  EXPECT_NEAR(hostEstimateP2pUs(65536, 1024, cls), k.opUs + k.hopUs[0] + b / k.p2pBytesPerUs.inCache, 1e-9);
  EXPECT_EQ(hostEstimateP2pUs(0, 0, cls), k.opUs);
}

// The step term counts the FIFO steps Primitives cut a slice into beyond the one each hand-off
// carries: a ring AllReduce round is n chunks of kChunkSteps steps, each rank sending 2(n-1) slices.
TEST(HostModel, FurtherStepsAsPrimitivesCutSlices) {
  const size_t step = 4096;
  const size_t round2 = 2 * kChunkSteps * step;  // two ranks' round: two chunks
  // A slice of at most one step: none further, however small (an empty step still hands off).
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 8, 2, step), 0);
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 2 * step, 2, step), 0);
  // One byte more: each of the two slices takes two steps.
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 2 * step + 2, 2, step), 2);
  // Whole rounds: kChunkSteps steps a slice, 2(n-1) slices a round, less the 2(n-1) hand-offs.
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 3 * round2, 2, step), 2.0 * 3 * kChunkSteps - 2);
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 4 * kChunkSteps * step, 4, step),
            6.0 * kChunkSteps - 6);
  // Two-rank one-shot: the whole input through one connection; the tree: up, then down.
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kOneShot, 5 * step, 2, step), 4);
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kTree, 5 * step, 4, step), 8);
  // AllGather: each rank's part forwarded n-1 times; Broadcast: the whole message.
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllGather, Algorithm::kRing, 3 * 2 * step, 3, step), 2);
  EXPECT_EQ(hostFurtherSteps(CollKind::kBroadcast, Algorithm::kRing, 3 * step, 3, step), 2);
  // No ring steps: Direct, one-shot on more ranks (per-peer connections), or an unknown step.
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kDirect, 5 * step, 2, step), 0);
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kOneShot, 5 * step, 4, step), 0);
  EXPECT_EQ(hostFurtherSteps(CollKind::kAllReduce, Algorithm::kRing, 5 * step, 2, 0), 0);
}

// Each further step costs its protocol's stepUs on top of the rest of the estimate.
TEST(HostModel, EstimateAddsTheStepCost) {
  const size_t step = 131072, bytes = size_t{3} << 20;
  for (int c = 0; c < kHostLinkClassCount; ++c) {
    const auto cls = static_cast<HostLinkClass>(c);
    const HostLinkConstants& k = hostLinkConstants(cls);
    for (Protocol pr : {Protocol::kSimple, Protocol::kLL}) {
      const int proto = pr == Protocol::kLL ? 1 : 0;
      for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShot, Algorithm::kTree}) {
        const int n = a == Algorithm::kTree ? 4 : 2;
        const double withSteps = hostEstimateUs(plan(CollKind::kAllReduce, a, pr, bytes, n, step), cls);
        const double without = hostEstimateUs(plan(CollKind::kAllReduce, a, pr, bytes, n), cls);
        EXPECT_NEAR(withSteps - without, hostFurtherSteps(CollKind::kAllReduce, a, bytes, n, step) * k.stepUs[proto],
                    1e-9)
            << hostLinkClassName(cls) << " " << algorithmName(a) << "/" << protocolName(pr);
      }
    }
  }
}

// The cache term: a message below kHostModelCacheSplitBytes moves at each in-cache rate, one from
// it up at the out-of-cache rate, whatever the algorithm; measured, memory is the slower.
TEST(HostModel, RatesChangeAtTheCacheSplit) {
  const double split = static_cast<double>(kHostModelCacheSplitBytes);
  const size_t below = kHostModelCacheSplitBytes - 4096, at = kHostModelCacheSplitBytes;
  for (int c = 0; c < kHostLinkClassCount; ++c) {
    const auto cls = static_cast<HostLinkClass>(c);
    const HostLinkConstants& k = hostLinkConstants(cls);
    EXPECT_LT(k.bytesPerUs[0].outOfCache, k.bytesPerUs[0].inCache) << hostLinkClassName(cls);
    EXPECT_LT(k.oneShotBytesPerUs.outOfCache, k.oneShotBytesPerUs.inCache) << hostLinkClassName(cls);
    EXPECT_LT(k.p2pBytesPerUs.outOfCache, k.p2pBytesPerUs.inCache) << hostLinkClassName(cls);
    auto ring = [&](size_t bytes) {
      return hostEstimateUs(plan(CollKind::kBroadcast, Algorithm::kRing, Protocol::kSimple, bytes, 2), cls);
    };
    EXPECT_NEAR(ring(below), k.opUs + k.hopUs[0] + (split - 4096) / k.bytesPerUs[0].inCache, 1e-6);
    EXPECT_NEAR(ring(at), k.opUs + k.hopUs[0] + split / k.bytesPerUs[0].outOfCache, 1e-6);
    EXPECT_GT(ring(at), ring(below));
    EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kOneShot, Protocol::kSimple, at, 2), cls),
                k.opUs + k.hopUs[0] + split / k.oneShotBytesPerUs.outOfCache, 1e-6);
    EXPECT_NEAR(hostEstimateUs(plan(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, at, 4), cls),
                k.opUs + 4 * k.hopUs[0] + 2 * split / k.bytesPerUs[0].outOfCache, 1e-6);
    // A point-to-point batch: its larger direction decides.
    EXPECT_NEAR(hostEstimateP2pUs(at, below, cls), k.opUs + k.hopUs[0] + split / k.p2pBytesPerUs.outOfCache, 1e-6);
    EXPECT_NEAR(hostEstimateP2pUs(1024, below, cls), k.opUs + k.hopUs[0] + (split - 4096) / k.p2pBytesPerUs.inCache,
                1e-6);
  }
  // Direct between threads: its own rates on both sides; over NET it has none and takes the ring's.
  const HostLinkConstants& t = hostLinkConstants(HostLinkClass::kThreads);
  EXPECT_NEAR(
      hostEstimateUs(plan(CollKind::kBroadcast, Algorithm::kDirect, Protocol::kSimple, at, 2), HostLinkClass::kThreads),
      t.opUs + 2 * t.hopUs[0] + split / t.directBytesPerUs.outOfCache, 1e-6);
  const HostLinkConstants& net = hostLinkConstants(HostLinkClass::kNet);
  EXPECT_NEAR(
      hostEstimateUs(plan(CollKind::kBroadcast, Algorithm::kDirect, Protocol::kSimple, at, 2), HostLinkClass::kNet),
      net.opUs + 2 * net.hopUs[0] + split / net.bytesPerUs[0].outOfCache, 1e-6);
}

}  // namespace
}  // namespace collcomm::detail
