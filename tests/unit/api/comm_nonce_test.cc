// Each communicator a process makes is named by its rank 0's commNonce (transport/transport.h),
// which the CUDA executor keys its launch groups by: the same on every rank of a communicator,
// different between communicators made from one unique id (COLLCOMM_COMM_ID hands the same id out
// again) or one after the other.
#include <gtest/gtest.h>

#include <set>

#include "collcomm.h"
#include "core/comm.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

TEST(CommNonce, SameOnEveryRankOfACommunicatorAndNoOtherCommunicators) {
  test::runWithWatchdog(60, [] {
    std::set<uint64_t> names;
    for (int made = 0; made < 3; ++made) {
      test::ThreadRanks ranks(3);
      ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
      const uint64_t name = ranks.comm(0)->peers[0].commNonce;
      for (int r = 0; r < 3; ++r) {
        const ccComm* comm = ranks.comm(r);
        EXPECT_EQ(comm->peers[0].commNonce, name) << "rank " << r;
        // Each rank made its own part; rank 0's names the communicator.
        for (int q = 1; q < 3; ++q) EXPECT_NE(comm->peers[q].commNonce, name) << "rank " << r << " peer " << q;
      }
      EXPECT_TRUE(names.insert(name).second) << "communicator " << made << " has an earlier one's name";
    }
  });
}

}  // namespace
}  // namespace collcomm::detail
