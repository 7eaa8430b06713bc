// The receiver's estimate of how far the sender's core is (device/host/core_distance.h): hits are
// ignored, a far average tells the sender, and only a clearly near one clears it again; the
// verdict travels in the FIFO's platform words, which both sides of the connection see, and leaves
// the portable FifoCtrl alone.
#include "device/host/core_distance.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "support/fifo_block.h"

namespace collcomm::detail {
namespace {

class CoreDistance : public ::testing::Test {
 protected:
  void SetUp() override {
    calibrateDistanceClock();
    bindFifo(recv_, block_.mem, kLayout);
    bindFifo(send_, block_.mem, kLayout);
  }
  // Feeds the same sample until the running average has settled on it.
  void feed(uint64_t ticks) {
    for (int i = 0; i < 64; ++i) noteWriterLoad(recv_, ticks);
  }
  const DistanceWords& words() const { return distanceWords(recv_.ctrl); }
  bool told() const { return words().far != 0; }

  static constexpr FifoLayout kLayout{1024, 64};
  test::FifoBlock block_{kLayout};
  RecvConn recv_;
  SendConn send_;  // the other side of the same FIFO
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
  EXPECT_FALSE(told());
  EXPECT_FALSE(receiverFindsFar(send_));
  feed(th.far * 2);
  EXPECT_TRUE(told());
  EXPECT_TRUE(receiverFindsFar(send_));
  // Between the thresholds the verdict holds, whichever it is.
  feed((th.near + th.far) / 2);
  EXPECT_TRUE(told());
  EXPECT_TRUE(receiverFindsFar(send_));
  feed(th.near - 1);
  EXPECT_FALSE(told());
  EXPECT_FALSE(receiverFindsFar(send_));
  feed((th.near + th.far) / 2);
  EXPECT_FALSE(told());
}

TEST_F(CoreDistance, HitsSayNothing) {
  const DistanceThresholds& th = distanceThresholds();
  feed(th.far * 2);
  ASSERT_TRUE(told());
  const uint64_t avg8 = words().loadTicks8;
  feed(th.miss - 1);  // loads that hit this core's cache: no change
  EXPECT_EQ(words().loadTicks8, avg8);
  EXPECT_TRUE(told());
}

TEST_F(CoreDistance, WordsLieBetweenTheCtrlAndTheSlots) {
  feed(distanceThresholds().far * 2);
  ASSERT_TRUE(receiverFindsFar(send_));
  // Nothing of the verdict in the portable control words, nor in the slots.
  const std::vector<char> zero(sizeof(FifoCtrl), 0);
  EXPECT_EQ(memcmp(recv_.ctrl, zero.data(), zero.size()), 0);
  const char* words = reinterpret_cast<const char*>(&distanceWords(recv_.ctrl));
  EXPECT_GE(words, block_.mem + sizeof(FifoCtrl));
  EXPECT_LE(words + sizeof(DistanceWords), recv_.simpleBuf);
}

}  // namespace
}  // namespace collcomm::detail
