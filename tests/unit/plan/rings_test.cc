// The channels' ring orders (plan/rings.h) on synthetic placements: ranks of one host contiguous,
// so a ring over H hosts crosses between hosts exactly H times whatever the numbering.
#include "plan/rings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace collcomm::detail {
namespace {

// Host keys are large and unordered on purpose: the rings must not follow the keys' values.
uint64_t hostKey(int h) { return 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(h + 7); }

// One process per rank, rank r on host hostOf[r].
std::vector<RankPlace> onHosts(const std::vector<int>& hostOf) {
  std::vector<RankPlace> places;
  for (size_t r = 0; r < hostOf.size(); ++r) places.push_back({hostKey(hostOf[r]), 1000 + r});
  return places;
}

bool isPermutation(const std::vector<int>& ring, int n) {
  std::vector<int> sorted = ring;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  return sorted == all;
}

TEST(Rings, RoundRobinAcrossThreeHostsCrossesThreeTimes) {
  const std::vector<RankPlace> places = onHosts({0, 1, 2, 0, 1, 2});
  const auto rings = planRings(places, 2, RingOrder::kHosts);
  ASSERT_EQ(rings.size(), 2u);
  for (const auto& ring : rings) {
    EXPECT_EQ(ring, (std::vector<int>{0, 3, 1, 4, 2, 5}));
    EXPECT_EQ(hostCrossings(places, ring), 3);
  }
  // The identity ring crosses on every hop.
  const auto identity = planRings(places, 1, RingOrder::kIdentity);
  EXPECT_EQ(identity[0], (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(hostCrossings(places, identity[0]), 6);
}

TEST(Rings, BlockedNumberingStaysTheIdentity) {
  const std::vector<RankPlace> places = onHosts({0, 0, 1, 1, 2, 2});
  const auto rings = planRings(places, 1, RingOrder::kHosts);
  EXPECT_EQ(rings[0], (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(hostCrossings(places, rings[0]), 3);
}

TEST(Rings, UnevenHostsOrderedByLowestRank) {
  // Host 5 holds rank 0, host 3 ranks 1 and 4..6, host 9 ranks 2 and 3 (keys ordered otherwise).
  const std::vector<RankPlace> places = onHosts({5, 3, 9, 9, 3, 3, 3});
  const auto ring = planRings(places, 1, RingOrder::kHosts)[0];
  EXPECT_EQ(ring, (std::vector<int>{0, 1, 4, 5, 6, 2, 3}));
  EXPECT_EQ(hostCrossings(places, ring), 3);
}

TEST(Rings, AnyNumberingCrossesOncePerHost) {
  // Every assignment of 8 ranks to 1..4 hosts from a fixed pseudo-random sequence.
  uint64_t state = 12345;
  for (int trial = 0; trial < 200; ++trial) {
    const int hosts = 1 + trial % 4, n = 8;
    std::vector<int> hostOf(n);
    for (int r = 0; r < n; ++r) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      hostOf[r] = r < hosts ? r : static_cast<int>((state >> 33) % hosts);
    }
    const std::vector<RankPlace> places = onHosts(hostOf);
    for (RingOrder order : {RingOrder::kHosts, RingOrder::kReverse}) {
      const auto ring = planRings(places, 1, order)[0];
      ASSERT_TRUE(isPermutation(ring, n));
      EXPECT_EQ(hostCrossings(places, ring), hosts == 1 ? 0 : hosts) << "trial " << trial;
    }
  }
}

TEST(Rings, ProcessesOfAHostContiguous) {
  // One host, two processes whose thread ranks interleave: process A has ranks 0, 2, 4.
  std::vector<RankPlace> places;
  for (int r = 0; r < 6; ++r) places.push_back({hostKey(0), r % 2 == 0 ? 0xAAull : 0x11ull});
  EXPECT_EQ(planRings(places, 1, RingOrder::kHosts)[0], (std::vector<int>{0, 2, 4, 1, 3, 5}));
}

TEST(Rings, ReverseIsTheHostsOrderBackwards) {
  const std::vector<RankPlace> places = onHosts({0, 1, 0, 1});
  EXPECT_EQ(planRings(places, 1, RingOrder::kReverse)[0], (std::vector<int>{3, 1, 2, 0}));
  // On one host: the identity backwards, a ring no consumer can mistake for the identity.
  EXPECT_EQ(planRings(onHosts({0, 0, 0}), 1, RingOrder::kReverse)[0], (std::vector<int>{2, 1, 0}));
}

// A GPU communicator's ranks in the order the topology's rings visit their devices: every channel
// takes it under the default rule; COLLCOMM_RING_ORDER=identity and reverse still decide.
TEST(Rings, TheTopologysOrderOfOneProcessesGpus) {
  const std::vector<RankPlace> places(4, RankPlace{hostKey(0), 1000});
  const std::vector<int> order = {0, 2, 1, 3};
  for (const auto& ring : planRings(places, 3, RingOrder::kHosts, order)) EXPECT_EQ(ring, order);
  EXPECT_EQ(planRings(places, 1, RingOrder::kIdentity, order)[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(planRings(places, 1, RingOrder::kReverse, order)[0], (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(planRings(places, 1, RingOrder::kHosts)[0], (std::vector<int>{0, 1, 2, 3}));
}

TEST(Rings, OneHostAndOneRank) {
  const auto one = onHosts({0, 0, 0, 0});
  const auto rings = planRings(one, 3, RingOrder::kHosts);
  ASSERT_EQ(rings.size(), 3u);
  for (const auto& ring : rings) EXPECT_EQ(ring, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(hostCrossings(one, rings[0]), 0);
  const auto single = planRings(onHosts({4}), 1, RingOrder::kHosts);
  EXPECT_EQ(single[0], (std::vector<int>{0}));
  EXPECT_EQ(planRings(onHosts({4}), 1, RingOrder::kReverse)[0], (std::vector<int>{0}));
}

}  // namespace
}  // namespace collcomm::detail
