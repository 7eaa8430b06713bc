// The receiver's estimate of how far the sender's core is (device/host/core_distance.h): hits are
// ignored, a far average sets the sender's hint, and only a clearly near one clears it again.
#include "device/host/core_distance.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace collcomm::detail {
namespace {

class CoreDistance : public ::testing::Test {
 protected:
  void SetUp() override {
    calibrateDistanceClock();
    conn_.ctrl = &ctrl_;
  }
  // Feeds the same sample until the running average has settled on it.
  void feed(uint64_t ticks) {
    for (int i = 0; i < 64; ++i) noteWriterLoad(conn_, ticks);
  }
  FifoCtrl ctrl_{};
  RecvConn conn_;
};

TEST_F(CoreDistance, ThresholdsAreOrdered) {
  const DistanceThresholds& th = distanceThresholds();
  EXPECT_GT(th.miss, 0u);
  EXPECT_LT(th.miss, th.near);
  EXPECT_LT(th.near, th.far);
  const uint64_t t0 = distanceClockStart();
  EXPECT_GE(distanceClockEnd(), t0);
}

TEST_F(CoreDistance, FarSetsTheHintAndOnlyNearClearsIt) {
  const DistanceThresholds& th = distanceThresholds();
  feed(th.near - 1);  // a near miss
  EXPECT_FALSE(conn_.writerFar);
  EXPECT_EQ(ctrl_.streamHint, 0u);
  feed(th.far * 2);
  EXPECT_TRUE(conn_.writerFar);
  EXPECT_EQ(ctrl_.streamHint, 1u);
  // Between the thresholds the verdict holds, whichever it is.
  feed((th.near + th.far) / 2);
  EXPECT_TRUE(conn_.writerFar);
  EXPECT_EQ(ctrl_.streamHint, 1u);
  feed(th.near - 1);
  EXPECT_FALSE(conn_.writerFar);
  EXPECT_EQ(ctrl_.streamHint, 0u);
  feed((th.near + th.far) / 2);
  EXPECT_FALSE(conn_.writerFar);
}

TEST_F(CoreDistance, HitsSayNothing) {
  const DistanceThresholds& th = distanceThresholds();
  feed(th.far * 2);
  ASSERT_TRUE(conn_.writerFar);
  const uint64_t avg8 = conn_.writerLoadTicks8;
  feed(th.miss - 1);  // loads that hit this core's cache: no change
  EXPECT_EQ(conn_.writerLoadTicks8, avg8);
  EXPECT_TRUE(conn_.writerFar);
}

}  // namespace
}  // namespace collcomm::detail
