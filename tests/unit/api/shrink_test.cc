// ccCommShrink on thread ranks: the remaining ranks make a communicator in the parent's order
// without the excluded ones taking part, a parent shrunk by CC_SHRINK_DEFAULT stays usable by all
// its ranks, the same parent shrinks again by other ranks, ranks that name different lists are
// refused on every rank that heard of it, and each wrong argument gets its sentence. A dead
// rank's process, excluded after the failure, is tests/mp's (ProcessFailure.SurvivorsShrink...).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collcomm.h"
#include "support/op_signal.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

bool contains(const char* text, const char* part) { return text != nullptr && strstr(text, part) != nullptr; }

bool excludes(const std::vector<int>& list, int rank) {
  for (int r : list)
    if (r == rank) return true;
  return false;
}

// The rank of `parentRank` among the parent's ranks minus `excluded`.
int rankAfter(const std::vector<int>& excluded, int parentRank) {
  int n = 0;
  for (int r = 0; r < parentRank; ++r) n += !excludes(excluded, r);
  return n;
}

// A call on another thread that is inside the library once the constructor returns (OpEntry);
// join() waits for it to end.
class CallInFlight {
 public:
  CallInFlight(ThreadRanks& ranks, ccComm_t comm, std::function<ccResult_t()> call) : entry_(comm) {
    thread_ = std::thread([this, call = std::move(call)] {
      entry_.announce();
      result_ = call();
    });
    if (!entry_.waitInside()) ranks.fail("a call on another thread never got inside");
  }
  ccResult_t join() {
    thread_.join();
    return result_;
  }

 private:
  OpEntry entry_;
  std::thread thread_;
  ccResult_t result_ = ccSuccess;
};

// On the remaining ranks: shrinks by `excluded` (as given, in any order) and checks the new
// communicator's size, its rank order and an exact allreduce and broadcast over it.
void shrinkAndCheck(ThreadRanks& ranks, int rank, ccComm_t comm, std::vector<int> excluded, int flags) {
  if (excludes(excluded, rank)) return;
  const int parentRanks = ranks.size();
  const int expectCount = parentRanks - static_cast<int>(excluded.size());
  ccComm_t sub = nullptr;
  const ccResult_t r = ccCommShrink(comm, excluded.data(), static_cast<int>(excluded.size()), &sub, nullptr, flags);
  const std::string who = "rank " + std::to_string(rank) + ": ";
  if (r != ccSuccess) return ranks.fail(who + "shrink: " + ccGetErrorString(r) + ": " + ccGetLastError(comm));
  int subRank = -1, subCount = 0;
  ccCommUserRank(sub, &subRank);
  ccCommCount(sub, &subCount);
  if (subCount != expectCount || subRank != rankAfter(excluded, rank))
    ranks.fail(who + "got rank " + std::to_string(subRank) + " of " + std::to_string(subCount));
  // Each rank contributes its parent rank: the sum names exactly the remaining ranks.
  int64_t v = rank, want = 0;
  for (int p = 0; p < parentRanks; ++p) want += excludes(excluded, p) ? 0 : p;
  if (ccAllReduce(&v, &v, 1, ccInt64, ccSum, sub, nullptr) != ccSuccess || v != want)
    ranks.fail(who + "allreduce on the shrunk communicator gave " + std::to_string(v) + ", expected " +
               std::to_string(want) + ": " + ccGetLastError(sub));
  // The last new rank broadcasts its parent rank.
  int last = parentRanks - 1;
  while (excludes(excluded, last)) --last;
  int32_t b = rank;
  if (ccBroadcast(&b, &b, 1, ccInt32, expectCount - 1, sub, nullptr) != ccSuccess || b != last)
    ranks.fail(who + "broadcast from the last new rank gave " + std::to_string(b) + ", expected " +
               std::to_string(last));
  if (ccCommDestroy(sub) != ccSuccess) ranks.fail(who + "destroying the shrunk communicator failed");
}

TEST(Shrink, RemainingRanksMakeACommunicatorInTheParentsOrder) {
  Watchdog dog(60, "shrink");
  ThreadRanks ranks(5);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    shrinkAndCheck(ranks, rank, comm, {3, 1}, CC_SHRINK_DEFAULT);
    // CC_SHRINK_DEFAULT leaves the parent whole: every rank, the excluded ones too, uses it.
    int v = 1;
    if (ccAllReduce(&v, &v, 1, ccInt32, ccSum, comm, nullptr) != ccSuccess || v != 5)
      ranks.fail("rank " + std::to_string(rank) + ": the parent's allreduce after the shrink gave " +
                 std::to_string(v) + ": " + ccGetLastError(comm));
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// Shrinks of one parent by different ranks, the parent's rank 0 excluded first (the lowest
// remaining rank then leads), and the same set twice: each shrink's messages meet their own.
TEST(Shrink, OneParentShrunkAgainByOtherRanks) {
  Watchdog dog(60, "shrink twice");
  ThreadRanks ranks(4);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    shrinkAndCheck(ranks, rank, comm, {0}, CC_SHRINK_DEFAULT);
    shrinkAndCheck(ranks, rank, comm, {3}, CC_SHRINK_DEFAULT);
    shrinkAndCheck(ranks, rank, comm, {0}, CC_SHRINK_DEFAULT);
    shrinkAndCheck(ranks, rank, comm, {1, 2}, CC_SHRINK_DEFAULT);
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// Inside a group, CC_SHRINK_DEFAULT runs with the parent's share at ccGroupEnd, after the parent's
// operations queued before it, as ccCommSplit does; *newcomm is written then.
TEST(Shrink, InsideAGroupRunsAtGroupEnd) {
  Watchdog dog(60, "shrink in a group");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    if (rank == 0) return;
    int excluded = 0;
    int v = rank;
    ccComm_t sub = nullptr;
    const std::string who = "rank " + std::to_string(rank) + ": ";
    if (ccGroupStart() != ccSuccess) return ranks.fail(who + "ccGroupStart failed");
    const ccResult_t queued = ccCommShrink(comm, &excluded, 1, &sub, nullptr, CC_SHRINK_DEFAULT);
    const ccResult_t ended = ccGroupEnd();
    if (queued != ccSuccess || ended != ccSuccess || sub == nullptr)
      return ranks.fail(who + "shrink in a group: " + ccGetErrorString(queued) + ", " + ccGetErrorString(ended) + ": " +
                        ccGetLastError(comm));
    if (ccAllReduce(&v, &v, 1, ccInt32, ccSum, sub, nullptr) != ccSuccess || v != 3)
      ranks.fail(who + "allreduce on the shrunk communicator gave " + std::to_string(v));
    ccCommDestroy(sub);
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// CC_SHRINK_ABORT on a communicator with nothing in flight: the shrunk one works, the parent is
// revoked (its later operations are refused, saying why) and still destroyed cleanly.
TEST(Shrink, AbortFlagRevokesTheParent) {
  Watchdog dog(60, "shrink abort");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    shrinkAndCheck(ranks, rank, comm, {1}, CC_SHRINK_ABORT);
    if (rank == 1) return;
    int v = 1;
    const ccResult_t r = ccAllReduce(&v, &v, 1, ccInt32, ccSum, comm, nullptr);
    if (r != ccInvalidUsage || !contains(ccGetLastError(comm), "CC_SHRINK_ABORT"))
      ranks.fail("rank " + std::to_string(rank) + ": the parent's allreduce after CC_SHRINK_ABORT returned " +
                 ccGetErrorString(r) + ": " + ccGetLastError(comm));
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// CC_SHRINK_ABORT stops an operation in flight on another thread: ranks 0 and 1 each start a call
// that waits on rank 2, which never joins, and shrink by rank 2 from a second thread once the call
// is inside. The call fails and the new communicator works; without the stop the shrink would
// refuse, another thread being inside.
void shrinkPastACallInFlight(const std::function<ccResult_t(ccComm_t, std::vector<float>&)>& call, bool warmUp) {
  Watchdog dog(60, "shrink abort in flight");
  setenv("COLLCOMM_TIMEOUT", "20", 1);
  ThreadRanks ranks(3);
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    const std::string who = "rank " + std::to_string(rank) + ": ";
    std::vector<float> buf(4096, 1.0f);
    if (warmUp && ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comm, nullptr) != ccSuccess)
      return ranks.fail(who + "the warm-up allreduce failed");
    if (rank == 2) return;
    CallInFlight op(ranks, comm, [&] { return call(comm, buf); });
    int excluded = 2;
    ccComm_t sub = nullptr;
    const ccResult_t r = ccCommShrink(comm, &excluded, 1, &sub, nullptr, CC_SHRINK_ABORT);
    const ccResult_t stuck = op.join();
    if (r != ccSuccess) return ranks.fail(who + "shrink: " + ccGetErrorString(r) + ": " + ccGetLastError(comm));
    if (stuck == ccSuccess) ranks.fail(who + "the call waiting on rank 2 succeeded");
    int v = rank + 1;
    if (ccAllReduce(&v, &v, 1, ccInt32, ccSum, sub, nullptr) != ccSuccess || v != 3)
      ranks.fail(who + "allreduce on the shrunk communicator gave " + std::to_string(v));
    ccCommDestroy(sub);
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// An allreduce waiting for rank 2's data (every connection made by a warm-up first).
TEST(Shrink, AbortFlagStopsAnOperationWaitingForData) {
  shrinkPastACallInFlight(
      [](ccComm_t comm, std::vector<float>& buf) {
        return ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comm, nullptr);
      },
      true);
}

// A first send to rank 2 waits inside the bootstrap exchange that sets up its connection, where
// the abort flag is not read: the shrink interrupts the bootstrap (it failed before that: the send
// stayed in its wait until the 20 s timeout). A send, not a receive: a receiver's half-made
// connection, which its sender never takes, stays allocated by design (transport/p2p).
TEST(Shrink, AbortFlagStopsAnOperationInsideAConnectionSetup) {
  shrinkPastACallInFlight(
      [](ccComm_t comm, std::vector<float>& buf) {
        return ccSend(buf.data(), buf.size(), ccFloat32, 2, comm, nullptr);
      },
      false);
}

// A rank whose own part fails still tells the lowest remaining rank, so every rank fails at once
// naming it: rank 1 calls CC_SHRINK_DEFAULT while another of its threads is inside a send to rank 3
// (which never receives), which that flag refuses.
TEST(Shrink, ARankThatCannotTakePartIsNamedByEveryRank) {
  Watchdog dog(60, "shrink refused");
  setenv("COLLCOMM_TIMEOUT", "20", 1);
  ThreadRanks ranks(4);
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    if (rank == 3) return;
    const std::string who = "rank " + std::to_string(rank) + ": ";
    std::vector<float> buf(64, 1.0f);
    std::optional<CallInFlight> sender;
    if (rank == 1)
      sender.emplace(ranks, comm, [&] { return ccSend(buf.data(), buf.size(), ccFloat32, 3, comm, nullptr); });
    int excluded = 3;
    ccComm_t sub = nullptr;
    const ccResult_t r = ccCommShrink(comm, &excluded, 1, &sub, nullptr, CC_SHRINK_DEFAULT);
    const std::string msg = ccGetLastError(comm);
    const char* want = rank == 1 ? "another thread is inside an operation" : "rank 1 (host ";
    if (r != ccInvalidUsage || sub != nullptr || msg.find(want) == std::string::npos ||
        (rank != 1 && msg.find("could not take part") == std::string::npos))
      ranks.fail(who + ccGetErrorString(r) + ": " + msg);
    if (rank == 1) {
      ccCommRevoke(comm, CC_REVOKE_DEFAULT);  // ends the send
      (void)sender->join();
    }
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

// After ccCommRevoke a communicator cannot be shrunk (revoking ends what the shrink talks over):
// refused at once with a sentence saying to use CC_SHRINK_ABORT.
TEST(Shrink, ARevokedCommunicatorIsRefused) {
  Watchdog dog(60, "shrink revoked");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccComm_t comm = ranks.comm(0);
  ASSERT_EQ(ccCommRevoke(comm, CC_REVOKE_DEFAULT), ccSuccess);
  int excluded = 1;
  ccComm_t sub = nullptr;
  EXPECT_EQ(ccCommShrink(comm, &excluded, 1, &sub, nullptr, CC_SHRINK_ABORT), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(comm), "CC_SHRINK_ABORT is the call")) << ccGetLastError(comm);
  EXPECT_EQ(sub, nullptr);
}

// Rank 2 excludes ranks 1 and 3 where ranks 0 and 1 exclude rank 3 only: the lowest remaining rank
// (0 in every view) refuses, and every rank that took part returns ccInvalidUsage naming rank 2.
TEST(Shrink, RanksThatNameDifferentListsAreRefused) {
  Watchdog dog(60, "shrink mismatch");
  setenv("COLLCOMM_TIMEOUT", "20", 1);
  ThreadRanks ranks(4);
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    if (rank == 3) return;
    std::vector<int> excluded = rank == 2 ? std::vector<int>{1, 3} : std::vector<int>{3};
    ccComm_t sub = nullptr;
    const ccResult_t r =
        ccCommShrink(comm, excluded.data(), static_cast<int>(excluded.size()), &sub, nullptr, CC_SHRINK_DEFAULT);
    const char* msg = ccGetLastError(comm);
    if (r != ccInvalidUsage || sub != nullptr || !contains(msg, "rank 2 (host ") ||
        !contains(msg, "must name the same ranks"))
      ranks.fail("rank " + std::to_string(rank) + ": " + ccGetErrorString(r) + ": " + msg);
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

TEST(Shrink, WrongArgumentsAreRefusedWithASentence) {
  Watchdog dog(60, "shrink arguments");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccComm_t comm = ranks.comm(1);
  ccComm_t sub = nullptr;
  int one[] = {2};
  struct Case {
    std::vector<int> list;
    int count;
    bool nullList;
    bool nullOut;
    int flags;
    const char* says;
  };
  const Case cases[] = {
      {{2}, 1, false, true, CC_SHRINK_DEFAULT, "newcomm is NULL"},
      {{2}, 1, false, false, 7, "shrinkFlags 7"},
      {{}, -1, false, false, CC_SHRINK_DEFAULT, "excludeRanksCount is -1"},
      {{}, 1, true, false, CC_SHRINK_DEFAULT, "excludeRanksCount is 1"},
      {{3}, 1, false, false, CC_SHRINK_DEFAULT, "excluded rank 3 is not a rank"},
      {{-1}, 1, false, false, CC_SHRINK_DEFAULT, "excluded rank -1 is not a rank"},
      {{2, 0, 2}, 3, false, false, CC_SHRINK_DEFAULT, "rank 2 is excluded twice"},
      {{0, 1}, 2, false, false, CC_SHRINK_DEFAULT, "rank 1 excludes itself"},
  };
  for (const Case& c : cases) {
    std::vector<int> list = c.list;
    const ccResult_t r =
        ccCommShrink(comm, c.nullList ? nullptr : list.data(), c.count, c.nullOut ? nullptr : &sub, nullptr, c.flags);
    EXPECT_EQ(r, ccInvalidArgument) << c.says;
    EXPECT_TRUE(contains(ccGetLastError(comm), c.says)) << ccGetLastError(comm);
  }
  EXPECT_EQ(ccGroupStart(), ccSuccess);
  EXPECT_EQ(ccCommShrink(comm, one, 1, &sub, nullptr, CC_SHRINK_ABORT), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(comm), "inside a group")) << ccGetLastError(comm);
  EXPECT_EQ(ccGroupEnd(), ccSuccess);
  EXPECT_EQ(ccCommShrink(nullptr, one, 1, &sub, nullptr, CC_SHRINK_DEFAULT), ccInvalidArgument);
  // Nothing was made, and the communicator is unharmed: every rank's allreduce still works.
  EXPECT_EQ(sub, nullptr);
  ranks.run([&](int rank, ccComm_t c) {
    int v = rank;
    if (ccAllReduce(&v, &v, 1, ccInt32, ccSum, c, nullptr) != ccSuccess || v != 3)
      ranks.fail("rank " + std::to_string(rank) + ": allreduce after the refused shrinks gave " + std::to_string(v));
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

}  // namespace
}  // namespace collcomm::test
