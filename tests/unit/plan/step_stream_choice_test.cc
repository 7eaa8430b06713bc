// The far operations' choice between streamed and plain FIFO steps (plan/step_stream_choice.h), on
// synthetic operation times.
#include <gtest/gtest.h>

#include <cstdint>

#include "plan/step_stream_choice.h"

namespace collcomm::detail {
namespace {

constexpr size_t kBytes = size_t{1} << 20;

// Runs `n` far operations of one kind and size that take `streamedNs` or `plainNs` as chosen;
// returns how many streamed.
int runFar(StepStreamChoice& c, int n, uint64_t streamedNs, uint64_t plainNs,
           CollKind kind = CollKind::kAllGather, size_t bytes = kBytes) {
  int streamed = 0;
  for (int i = 0; i < n; ++i) {
    const bool s = c.choose(kind, bytes, /*far=*/true);
    streamed += s;
    c.record(s ? streamedNs : plainNs);
  }
  return streamed;
}

TEST(StepStreamChoice, NearStreamsAsTheHintSaysAndLearnsNothing) {
  StepStreamChoice c;
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(c.choose(CollKind::kAllGather, kBytes, /*far=*/false));
    c.record(1);
  }
  // The first far operations still warm up, streamed first.
  EXPECT_TRUE(c.choose(CollKind::kAllGather, kBytes, true));
}

TEST(StepStreamChoice, WarmsUpBothWaysThenKeepsTheFaster) {
  StepStreamChoice c;
  const uint32_t warm = StepStreamChoice::kRun;
  // A run of each way, streamed first.
  for (uint32_t i = 0; i < warm; ++i) {
    EXPECT_TRUE(c.choose(CollKind::kAllGather, kBytes, true)) << i;
    c.record(50000);
  }
  for (uint32_t i = 0; i < warm; ++i) {
    EXPECT_FALSE(c.choose(CollKind::kAllGather, kBytes, true)) << i;
    c.record(35000);
  }
  // Plain is faster but within 1.5x: streamed is tried again in a run every kRetryClose.
  const int n = 10 * StepStreamChoice::kRetryClose;
  const int streamed = runFar(c, n, 50000, 35000);
  EXPECT_EQ(streamed, 10 * static_cast<int>(StepStreamChoice::kRun));
}

TEST(StepStreamChoice, AWaySlowerByMoreThanFarApartIsRetriedRarely) {
  StepStreamChoice c;
  runFar(c, 2 * StepStreamChoice::kRun, 10000, 50000);  // warm-up
  const int n = 4 * StepStreamChoice::kRetryFar;
  const int plain = n - runFar(c, n, 10000, 50000);
  EXPECT_EQ(plain, 4 * static_cast<int>(StepStreamChoice::kRun));
}

TEST(StepStreamChoice, FollowsAChangeOfWhichWayIsFaster) {
  StepStreamChoice c;
  runFar(c, 200, 50000, 35000);
  // Now streaming is much faster: the next retry run finds it, and plain is left.
  runFar(c, 2 * StepStreamChoice::kRetryClose, 10000, 35000);
  const int n = 2 * StepStreamChoice::kRetryFar;
  EXPECT_GE(runFar(c, n, 10000, 35000), n - 2 * static_cast<int>(StepStreamChoice::kRun));
}

TEST(StepStreamChoice, FirstOperationAfterAChangeOfWayIsNotCounted) {
  StepStreamChoice c;
  // The first plain operation is very slow; the others show plain faster.
  for (int i = 0; i < 2; ++i) {
    for (uint32_t j = 0; j < StepStreamChoice::kRun; ++j) {
      const bool s = c.choose(CollKind::kBroadcast, kBytes, true);
      EXPECT_EQ(s, i == 0);
      c.record(j == 0 && !s ? 10000000 : (s ? 50000 : 30000));  // counted, it would make plain lose
    }
  }
  EXPECT_FALSE(c.choose(CollKind::kBroadcast, kBytes, true));
}

TEST(StepStreamChoice, KindsAndSizesLearnApartAndAFarPhaseStartsAfresh) {
  StepStreamChoice c;
  runFar(c, 100, 50000, 30000, CollKind::kAllGather, kBytes);        // plain wins
  runFar(c, 100, 10000, 30000, CollKind::kAllReduce, kBytes);        // streamed wins
  runFar(c, 100, 10000, 30000, CollKind::kAllGather, 16 * kBytes);   // streamed wins at 16 MiB
  // Sizes within one power of two share what was learned (times per byte).
  EXPECT_FALSE(c.choose(CollKind::kAllGather, kBytes + kBytes / 2, true));
  c.record(45000);
  EXPECT_TRUE(c.choose(CollKind::kAllReduce, kBytes, true));
  c.record(10000);
  EXPECT_TRUE(c.choose(CollKind::kAllGather, 16 * kBytes, true));
  c.record(10000);
  // A near operation ends the far phase; the next one warms up again, streamed first.
  c.choose(CollKind::kAllGather, kBytes, false);
  EXPECT_TRUE(c.choose(CollKind::kAllGather, kBytes, true));
}

TEST(StepStreamChoice, OnlyCountedOperationsAreTimed) {
  StepStreamChoice c;
  c.choose(CollKind::kAllGather, kBytes, /*far=*/false);
  EXPECT_FALSE(c.wantsTime());  // near: nothing to learn
  c.choose(CollKind::kAllGather, kBytes, true);
  EXPECT_FALSE(c.wantsTime());  // the first of its way
  c.choose(CollKind::kAllGather, kBytes, true);
  EXPECT_TRUE(c.wantsTime());
  c.record(1000);
  EXPECT_FALSE(c.wantsTime());  // recorded: nothing pending
}

TEST(StepStreamChoice, AnOperationNotRecordedTeachesNothing) {
  StepStreamChoice c;
  // Failed operations are not recorded: a warm-up run of them counts nothing, so the next run is
  // streamed again rather than plain.
  for (uint32_t i = 0; i < 2 * StepStreamChoice::kRun; ++i)
    EXPECT_TRUE(c.choose(CollKind::kAllGather, kBytes, true)) << i;
}

}  // namespace
}  // namespace collcomm::detail
