// The planner's per-operation choices (plan/tuner.h) and the oversubscription rule that sets how
// host waits spin (core/peer_info.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "core/peer_info.h"
#include "plan/tuner.h"
#include "topo/cpu_cache.h"

namespace collcomm::detail {
namespace {

TunerConfig loaded() {
  TunerConfig cfg;
  EXPECT_EQ(loadTunerConfig(&cfg), kOk);
  return cfg;
}

TEST(Planner, DefaultsByKindSizeAndRanks) {
  const TunerConfig cfg = loaded();
  // Two-rank AllReduce: one-shot up to the threshold, ring above; LL for the smallest only.
  CollPlan p = planCollective(cfg, CollKind::kAllReduce, 8, 2, 1);
  EXPECT_EQ(p.algo, Algorithm::kOneShot);
  EXPECT_EQ(p.proto, Protocol::kLL);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, cfg.llThreshold + 1, 2, 1).proto, Protocol::kSimple);
  EXPECT_FALSE(p.streamResults);
  p = planCollective(cfg, CollKind::kAllReduce, cfg.oneShotThreshold + 1, 2, 1);
  EXPECT_EQ(p.algo, Algorithm::kRing);
  EXPECT_EQ(p.proto, Protocol::kSimple);
  // More ranks: one-shot while what a rank receives stays under the threshold.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 3, 1).algo, Algorithm::kOneShot);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, cfg.oneShotThreshold / 3, 4, 1).algo, Algorithm::kOneShot);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, cfg.oneShotThreshold / 3 + 1, 4, 1).algo, Algorithm::kRing);
  // Over NET one-shot reaches further (the ring's second phase is a network round trip).
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, cfg.oneShotNetThreshold, 2, 1, DirectReach::kNone, true).algo,
            Algorithm::kOneShot);
  EXPECT_EQ(
      planCollective(cfg, CollKind::kAllReduce, cfg.oneShotNetThreshold + 1, 2, 1, DirectReach::kNone, true).algo,
      Algorithm::kRing);
  // ... for two ranks; more keep the shared-memory threshold.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, cfg.oneShotThreshold / 3 + 1, 4, 1, DirectReach::kNone, true).algo,
            Algorithm::kRing);
  // Other collectives: rings.
  EXPECT_EQ(planCollective(cfg, CollKind::kReduceScatter, 8, 2, 1).algo, Algorithm::kRing);
  // Results stream past the cache from the threshold up.
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllGather, cfg.streamThreshold - 1, 4, 1).streamResults);
  EXPECT_TRUE(planCollective(cfg, CollKind::kAllGather, cfg.streamThreshold, 4, 1).streamResults);
  // Over NET from their own, larger threshold.
  ASSERT_GT(cfg.netStreamThreshold, cfg.streamThreshold);
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllReduce, cfg.streamThreshold, 2, 1, DirectReach::kNone, true)
                   .streamResults);
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllReduce, cfg.netStreamThreshold - 1, 2, 1, DirectReach::kNone, true)
                   .streamResults);
  EXPECT_TRUE(planCollective(cfg, CollKind::kAllReduce, cfg.netStreamThreshold, 2, 1, DirectReach::kNone, true)
                  .streamResults);
  // FIFO steps may stream from their threshold up, never over NET (the local proxy reads them).
  EXPECT_FALSE(planCollective(cfg, CollKind::kBroadcast, cfg.stepStreamThreshold - 1, 2, 1).streamSteps);
  EXPECT_TRUE(planCollective(cfg, CollKind::kBroadcast, cfg.stepStreamThreshold, 2, 1).streamSteps);
  EXPECT_FALSE(planCollective(cfg, CollKind::kBroadcast, cfg.stepStreamThreshold, 2, 1, DirectReach::kNone,
                              /*overNet=*/true)
                   .streamSteps);
}

TEST(Planner, EnvironmentForcesAndRejects) {
  setenv("COLLCOMM_ALGO", "oneshot", 1);
  setenv("COLLCOMM_PROTO", "Simple", 1);
  setenv("COLLCOMM_STREAM_THRESHOLD", "0", 1);
  setenv("COLLCOMM_LL_THRESHOLD", "1024", 1);
  setenv("COLLCOMM_ONESHOT_THRESHOLD", "4096", 1);
  setenv("COLLCOMM_SEND_NOW_THRESHOLD", "65536", 1);
  TunerConfig cfg = loaded();
  EXPECT_EQ(cfg.llThreshold, 1024u);
  EXPECT_EQ(cfg.oneShotThreshold, 4096u);
  EXPECT_EQ(cfg.oneShotNetThreshold, 4096u);  // one variable for both
  EXPECT_EQ(cfg.sendNowThreshold, 65536u);
  unsetenv("COLLCOMM_SEND_NOW_THRESHOLD");
  EXPECT_EQ(loaded().sendNowThreshold, size_t{16} << 10);
  unsetenv("COLLCOMM_LL_THRESHOLD");
  unsetenv("COLLCOMM_ONESHOT_THRESHOLD");
  CollPlan p = planCollective(cfg, CollKind::kAllReduce, 1 << 30, 2, 1);
  EXPECT_EQ(p.algo, Algorithm::kOneShot);
  EXPECT_EQ(p.proto, Protocol::kSimple);
  EXPECT_TRUE(planCollective(cfg, CollKind::kAllReduce, 4, 2, 1).streamResults);
  // A forced one-shot leaves what it cannot do on rings.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 4, 1).algo, Algorithm::kOneShot);
  EXPECT_EQ(planCollective(cfg, CollKind::kBroadcast, 8, 2, 1).algo, Algorithm::kRing);
  // A forced Tree runs AllReduce on the trees (from two ranks), the rest on rings.
  setenv("COLLCOMM_ALGO", "tree", 1);
  cfg = loaded();
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 5, 1).algo, Algorithm::kTree);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 1 << 30, 2, 1).algo, Algorithm::kTree);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 1, 1).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kReduce, 8, 4, 1).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllGather, 1 << 20, 4, 1, DirectReach::kInProcess).algo, Algorithm::kRing);
  setenv("COLLCOMM_ALGO", "Butterfly", 1);
  EXPECT_EQ(loadTunerConfig(&cfg), Status::kInvalidArgument);
  unsetenv("COLLCOMM_ALGO");
  unsetenv("COLLCOMM_PROTO");
  unsetenv("COLLCOMM_STREAM_THRESHOLD");
}

TEST(Planner, StepStreamingModes) {
  const TunerConfig dflt = loaded();
  EXPECT_FALSE(planCollective(dflt, CollKind::kAllReduce, size_t{1} << 20, 2, 1).streamStepsAlways);
  setenv("COLLCOMM_STEP_STREAM", "always", 1);
  TunerConfig cfg = loaded();
  CollPlan p = planCollective(cfg, CollKind::kAllReduce, cfg.stepStreamThreshold, 2, 1);
  EXPECT_TRUE(p.streamSteps);
  EXPECT_TRUE(p.streamStepsAlways);
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllReduce, cfg.stepStreamThreshold - 1, 2, 1).streamStepsAlways);
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllReduce, cfg.stepStreamThreshold, 2, 1, DirectReach::kNone, true)
                   .streamStepsAlways);
  setenv("COLLCOMM_STEP_STREAM", "never", 1);
  cfg = loaded();
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllReduce, size_t{1} << 30, 2, 1).streamSteps);
  setenv("COLLCOMM_STEP_STREAM", "sometimes", 1);
  EXPECT_EQ(loadTunerConfig(&cfg), Status::kInvalidArgument);
  unsetenv("COLLCOMM_STEP_STREAM");
}

TEST(Planner, StreamThresholdFollowsTheLastLevelCache) {
  // Half the last-level cache, never below 4 MiB; an unknown cache (0) keeps 4 MiB.
  EXPECT_EQ(TunerConfig::defaultStreamThreshold(0), size_t{4} << 20);
  EXPECT_EQ(TunerConfig::defaultStreamThreshold(size_t{8} << 20), size_t{4} << 20);
  EXPECT_EQ(TunerConfig::defaultStreamThreshold(size_t{32} << 20), size_t{16} << 20);
  EXPECT_EQ(TunerConfig::defaultStreamThreshold(size_t{96} << 20), size_t{48} << 20);
  // Over NET: the whole cache, never below 8 MiB.
  EXPECT_EQ(TunerConfig::defaultNetStreamThreshold(0), size_t{8} << 20);
  EXPECT_EQ(TunerConfig::defaultNetStreamThreshold(size_t{4} << 20), size_t{8} << 20);
  EXPECT_EQ(TunerConfig::defaultNetStreamThreshold(size_t{32} << 20), size_t{32} << 20);
  // Loaded without COLLCOMM_STREAM_THRESHOLD: this host's cache decides; with it, the variable,
  // over NET too.
  unsetenv("COLLCOMM_STREAM_THRESHOLD");
  EXPECT_EQ(loaded().streamThreshold, TunerConfig::defaultStreamThreshold(lastLevelCacheBytes()));
  EXPECT_EQ(loaded().netStreamThreshold, TunerConfig::defaultNetStreamThreshold(lastLevelCacheBytes()));
  setenv("COLLCOMM_STREAM_THRESHOLD", "12345", 1);
  EXPECT_EQ(loaded().streamThreshold, size_t{12345});
  EXPECT_EQ(loaded().netStreamThreshold, size_t{12345});
  unsetenv("COLLCOMM_STREAM_THRESHOLD");
}

TEST(Planner, DirectWhereTheCommunicatorCan) {
  const TunerConfig cfg = loaded();
  constexpr auto kIn = DirectReach::kInProcess, kCross = DirectReach::kCrossProcess;
  const size_t ag = cfg.directThreshold[static_cast<int>(CollKind::kAllGather)];
  ASSERT_NE(ag, SIZE_MAX) << "Direct AllGather among threads is on by default (measured: tuner.cc)";
  // From the threshold up, only when the communicator can.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllGather, ag, 2, 1, kIn).algo, Algorithm::kDirect);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllGather, ag - 1, 2, 1, kIn).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllGather, ag, 2, 1, DirectReach::kNone).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllGather, ag, 2, 1).algo, Algorithm::kRing);
  // Across processes the cross-memory-attach thresholds apply.
  for (CollKind k : {CollKind::kAllGather, CollKind::kBroadcast, CollKind::kReduceScatter, CollKind::kAllReduce}) {
    const size_t t = cfg.directCmaThreshold[static_cast<int>(k)];
    if (t == SIZE_MAX) {
      EXPECT_NE(planCollective(cfg, k, size_t{1} << 30, 2, 1, kCross).algo, Algorithm::kDirect) << collName(k);
    } else {
      // From the threshold up, with no upper end.
      EXPECT_EQ(planCollective(cfg, k, t, 2, 1, kCross).algo, Algorithm::kDirect) << collName(k);
      EXPECT_NE(planCollective(cfg, k, t - 1, 2, 1, kCross).algo, Algorithm::kDirect) << collName(k);
      EXPECT_EQ(planCollective(cfg, k, std::max(t, size_t{1} << 30), 2, 1, kCross).algo, Algorithm::kDirect)
          << collName(k);
    }
  }
  // Collectives without a Direct algorithm never get it.
  EXPECT_EQ(planCollective(cfg, CollKind::kReduce, size_t{1} << 30, 2, 1, kIn).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kAlltoAll, size_t{1} << 30, 2, 1, kIn).algo, Algorithm::kRing);
  // Small AllReduce stays one-shot.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 2, 1, kIn).algo, Algorithm::kOneShot);
}

TEST(Planner, DirectForcedAndThresholdFromEnvironment) {
  setenv("COLLCOMM_ALGO", "direct", 1);
  TunerConfig cfg = loaded();
  unsetenv("COLLCOMM_ALGO");
  for (CollKind k : {CollKind::kAllGather, CollKind::kBroadcast, CollKind::kReduceScatter, CollKind::kAllReduce}) {
    EXPECT_EQ(planCollective(cfg, k, 0, 3, 1, DirectReach::kInProcess).algo, Algorithm::kDirect) << collName(k);
    EXPECT_EQ(planCollective(cfg, k, size_t{1} << 30, 2, 1, DirectReach::kCrossProcess).algo, Algorithm::kDirect)
        << collName(k);
  }
  // Forced but not possible (or not existing): the normal choice.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 2, 1, DirectReach::kNone).algo, Algorithm::kOneShot);
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, size_t{1} << 30, 2, 1).algo, Algorithm::kRing);
  EXPECT_EQ(planCollective(cfg, CollKind::kReduce, 8, 2, 1, DirectReach::kInProcess).algo, Algorithm::kRing);
  setenv("COLLCOMM_DIRECT_THRESHOLD", "4096", 1);
  cfg = loaded();
  unsetenv("COLLCOMM_DIRECT_THRESHOLD");
  for (CollKind k : {CollKind::kAllGather, CollKind::kBroadcast, CollKind::kReduceScatter, CollKind::kAllReduce}) {
    for (DirectReach reach : {DirectReach::kInProcess, DirectReach::kCrossProcess}) {
      EXPECT_EQ(planCollective(cfg, k, 4096, 2, 1, reach).algo, Algorithm::kDirect) << collName(k);
      EXPECT_EQ(planCollective(cfg, k, size_t{1} << 30, 2, 1, reach).algo, Algorithm::kDirect) << collName(k);
      EXPECT_NE(planCollective(cfg, k, 4095, 2, 1, reach).algo, Algorithm::kDirect) << collName(k);
    }
  }
  EXPECT_EQ(cfg.directThreshold[static_cast<int>(CollKind::kReduce)], SIZE_MAX);
}

PeerInfo rankOn(uint64_t host, std::initializer_list<int> cpus) {
  PeerInfo p{};
  p.hostHash = host;
  for (int c : cpus) p.cpuMask[c / 64] |= uint64_t{1} << (c % 64);
  return p;
}

TEST(Oversubscription, RanksAgainstTheCpusTheyMayUse) {
  // Two ranks pinned to two cores: fine. Four unpinned on two: oversubscribed.
  EXPECT_FALSE(hostOversubscribed({rankOn(1, {0}), rankOn(1, {1})}, 0));
  EXPECT_TRUE(hostOversubscribed({rankOn(1, {0, 1}), rankOn(1, {0, 1}), rankOn(1, {0, 1}), rankOn(1, {0, 1})}, 2));
  // Two ranks pinned to the same core share it.
  EXPECT_TRUE(hostOversubscribed({rankOn(1, {3}), rankOn(1, {3})}, 1));
  // Ranks on other hosts do not count against this one; CPUs far up the mask count.
  EXPECT_FALSE(hostOversubscribed({rankOn(1, {0}), rankOn(2, {0}), rankOn(2, {0})}, 0));
  EXPECT_TRUE(hostOversubscribed({rankOn(1, {0}), rankOn(2, {0}), rankOn(2, {0})}, 1));
  EXPECT_FALSE(hostOversubscribed({rankOn(1, {1000}), rankOn(1, {700})}, 0));
  // A mask that could not be read says nothing.
  EXPECT_FALSE(hostOversubscribed({rankOn(1, {}), rankOn(1, {})}, 0));
}

TEST(Oversubscription, ProxyThreadsCountOncePerProcess) {
  auto inProcess = [](PeerInfo p, uint64_t token) {
    p.processToken = token;
    return p;
  };
  // Two processes pinned one per core: alone they fit; with a proxy thread each they do not.
  const std::vector<PeerInfo> twoProcs = {inProcess(rankOn(1, {0}), 7), inProcess(rankOn(1, {1}), 8)};
  EXPECT_FALSE(hostOversubscribed(twoProcs, 0, 0));
  EXPECT_TRUE(hostOversubscribed(twoProcs, 0, 1));
  // One process with two thread ranks on four CPUs: two ranks and one proxy fit.
  const std::vector<PeerInfo> oneProc = {inProcess(rankOn(1, {0, 1, 2, 3}), 7),
                                         inProcess(rankOn(1, {0, 1, 2, 3}), 7)};
  EXPECT_FALSE(hostOversubscribed(oneProc, 1, 1));
  // Processes on other hosts bring their proxies to their own hosts.
  const std::vector<PeerInfo> twoHosts = {inProcess(rankOn(1, {0, 1}), 7), inProcess(rankOn(2, {0}), 8)};
  EXPECT_FALSE(hostOversubscribed(twoHosts, 0, 1));
  EXPECT_TRUE(hostOversubscribed(twoHosts, 1, 1));
}

}  // namespace
}  // namespace collcomm::detail
