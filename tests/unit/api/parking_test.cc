// A host thread that waits long for its peer sleeps instead of taking turns on the core
// (COLLCOMM_PARK_AFTER_US, host_platform.h waitUntil), and wakes when the peer publishes.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "support/op_signal.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

// Rank 0 enters an AllReduce that cannot finish without rank 1; rank 1 comes only once rank 0's
// thread is asleep in the kernel (a yielding thread stays runnable, state R). Both then get the
// exact sum, over several sizes (LL and Simple waits) and both directions of the late arrival.
TEST(Parking, ALateRanksPeerSleepsAndWakesWhenItComes) {
  Watchdog dog(120, "parking");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  for (const size_t count : {size_t{1}, size_t{4096}, size_t{1} << 20}) {
    for (int early = 0; early < 2; ++early) {
      const int late = 1 - early;
      std::vector<float> a(count, 1.0f), b(count, 2.0f);
      std::atomic<pid_t> tid{0};
      ccResult_t earlyResult = ccInternalError;
      std::thread waiter([&] {
        tid.store(currentTid());
        earlyResult = ccAllReduce(a.data(), a.data(), count, ccFloat32, ccSum, ranks.comm(early), nullptr);
      });
      while (tid.load() == 0) std::this_thread::yield();
      EXPECT_TRUE(waitThreadAsleep(tid.load())) << "rank " << early << " never slept while waiting (count " << count
                                                << ")";
      EXPECT_EQ(ccAllReduce(b.data(), b.data(), count, ccFloat32, ccSum, ranks.comm(late), nullptr), ccSuccess)
          << ccGetLastError(ranks.comm(late));
      waiter.join();
      EXPECT_EQ(earlyResult, ccSuccess) << ccGetLastError(ranks.comm(early));
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(a[i], 3.0f) << "rank " << early << " element " << i << " of " << count;
        ASSERT_EQ(b[i], 3.0f) << "rank " << late << " element " << i << " of " << count;
      }
    }
  }
}

}  // namespace
}  // namespace collcomm::test
