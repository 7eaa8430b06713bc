// Where LL steps go in the FIFO's ring (device/fifo.h LlCursor): packed 32 bytes apart, never
// across the ring's end, and a sender that waits for fits() never overwrites a line the receiver
// has not read.
#include "device/fifo.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace collcomm::detail {
namespace {

TEST(LlCursor, SmallStepsPackTwoToACacheLine) {
  LlCursor c;
  EXPECT_EQ(c.place(2, 64), 0u);  // an 8-byte message: 2 lines, rounded to 4
  EXPECT_EQ(c.place(2, 64), 4u);
  EXPECT_EQ(c.place(1, 64), 8u);
  EXPECT_EQ(c.place(5, 64), 12u);  // 5 lines take 8
  EXPECT_EQ(c.offset, 20u);
  EXPECT_EQ(c.line, 20u);
}

TEST(LlCursor, EmptyStepTakesNoLines) {
  LlCursor c;
  EXPECT_EQ(c.place(0, 64), 0u);
  EXPECT_EQ(c.place(0, 64), 0u);
  EXPECT_EQ(c.line, 0u);
}

TEST(LlCursor, StepThatWouldWrapStartsTheRingAgain) {
  LlCursor c;
  EXPECT_EQ(c.place(56, 64), 0u);
  EXPECT_EQ(c.place(16, 64), 0u);  // 8 lines left at the end: skipped
  EXPECT_EQ(c.line, 64u + 16u);
  EXPECT_EQ(c.offset, 16u);
  EXPECT_EQ(c.place(48, 64), 16u);  // exactly to the end
  EXPECT_EQ(c.offset, 64u);
  EXPECT_EQ(c.place(4, 64), 0u);  // nothing left: next lap, no padding
  EXPECT_EQ(c.line, 128u + 4u);
}

TEST(LlCursor, FitsLeavesRoomForTheLargestStepAndItsPadding) {
  LlCursor c;
  EXPECT_TRUE(c.fits(0, 16, 64));
  c.place(32, 64);
  EXPECT_TRUE(c.fits(0, 16, 64));   // 32 + 2 * 16 <= 64
  c.place(4, 64);
  EXPECT_FALSE(c.fits(0, 16, 64));  // 36 + 32 > 64
  EXPECT_TRUE(c.fits(4, 16, 64));   // the receiver has read the first 4 lines
  EXPECT_FALSE(c.fits(0, 15, 64));  // maxLines is rounded up as steps are
}

// A sender and a receiver with random step sizes and a receiver that lags by a random amount:
// every line the sender writes is one the receiver has finished with.
TEST(LlCursor, SenderNeverOverwritesUnreadLines) {
  constexpr uint32_t kMaxLines = 24;
  constexpr uint32_t kRing = kNumSteps * kMaxLines;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> size(0, kMaxLines);
  std::vector<int64_t> owner(kRing, -1);  // step whose unread lines are there, -1 when free
  LlCursor send, recv;
  uint64_t consumedLine = 0;
  struct InFlight {
    int64_t step;
    uint32_t start, lines;
  };
  std::deque<InFlight> fifo;
  int64_t sent = 0;
  for (int round = 0; round < 200000; ++round) {
    if (send.fits(consumedLine, kMaxLines, kRing) && fifo.size() < static_cast<size_t>(kLlSteps) &&
        (rng() & 1) != 0) {
      const uint32_t lines = size(rng);
      const uint32_t start = send.place(lines, kRing);
      ASSERT_LE(start + lines, kRing);
      ASSERT_EQ(start % kLlStepAlignLines, 0u);
      for (uint32_t i = 0; i < lines; ++i) {
        ASSERT_EQ(owner[start + i], -1) << "step " << sent << " overwrites unread step " << owner[start + i];
        owner[start + i] = sent;
      }
      fifo.push_back({sent++, start, lines});
    } else if (!fifo.empty()) {
      const InFlight s = fifo.front();
      fifo.pop_front();
      ASSERT_EQ(recv.place(s.lines, kRing), s.start);  // the receiver finds the step where it was put
      for (uint32_t i = 0; i < s.lines; ++i) owner[s.start + i] = -1;
      consumedLine = recv.line;
    }
  }
  EXPECT_GT(sent, 50000);
}

}  // namespace
}  // namespace collcomm::detail
