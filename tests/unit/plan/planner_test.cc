// The planner's per-operation choices (plan/tuner.h) and the oversubscription rule that sets how
// host waits spin (core/peer_info.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "core/peer_info.h"
#include "plan/tuner.h"

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
  // Other collectives: rings.
  EXPECT_EQ(planCollective(cfg, CollKind::kReduceScatter, 8, 2, 1).algo, Algorithm::kRing);
  // Results stream past the cache from the threshold up.
  EXPECT_FALSE(planCollective(cfg, CollKind::kAllGather, cfg.streamThreshold - 1, 4, 1).streamResults);
  EXPECT_TRUE(planCollective(cfg, CollKind::kAllGather, cfg.streamThreshold, 4, 1).streamResults);
}

TEST(Planner, EnvironmentForcesAndRejects) {
  setenv("COLLCOMM_ALGO", "oneshot", 1);
  setenv("COLLCOMM_PROTO", "Simple", 1);
  setenv("COLLCOMM_STREAM_THRESHOLD", "0", 1);
  setenv("COLLCOMM_LL_THRESHOLD", "1024", 1);
  TunerConfig cfg = loaded();
  EXPECT_EQ(cfg.llThreshold, 1024u);
  unsetenv("COLLCOMM_LL_THRESHOLD");
  CollPlan p = planCollective(cfg, CollKind::kAllReduce, 1 << 30, 2, 1);
  EXPECT_EQ(p.algo, Algorithm::kOneShot);
  EXPECT_EQ(p.proto, Protocol::kSimple);
  EXPECT_TRUE(planCollective(cfg, CollKind::kAllReduce, 4, 2, 1).streamResults);
  // A forced one-shot leaves what it cannot do on rings.
  EXPECT_EQ(planCollective(cfg, CollKind::kAllReduce, 8, 4, 1).algo, Algorithm::kOneShot);
  EXPECT_EQ(planCollective(cfg, CollKind::kBroadcast, 8, 2, 1).algo, Algorithm::kRing);
  setenv("COLLCOMM_ALGO", "Tree", 1);
  EXPECT_EQ(loadTunerConfig(&cfg), Status::kInvalidArgument);
  unsetenv("COLLCOMM_ALGO");
  unsetenv("COLLCOMM_PROTO");
  unsetenv("COLLCOMM_STREAM_THRESHOLD");
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
