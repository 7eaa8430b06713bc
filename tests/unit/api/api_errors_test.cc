// What users get wrong, and what goes wrong around them: every bad argument is rejected with a
// sentence and leaves the communicator usable; stuck operations end by timeout or abort, never hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/op_signal.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const char* text, const char* part) { return text != nullptr && strstr(text, part) != nullptr; }

// A float allreduce on every rank of `ranks`, checked.
void expectAllReduceWorks(ThreadRanks& ranks) {
  ranks.run([&](int rank, ccComm_t comm) {
    std::vector<float> buf(33, static_cast<float>(rank + 1));
    if (ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comm, nullptr) != ccSuccess) {
      ranks.fail(std::string("allreduce failed: ") + ccGetLastError(comm));
      return;
    }
    const float want = ranks.size() * (ranks.size() + 1) / 2.0f;
    for (float v : buf)
      if (v != want) return ranks.fail("allreduce gave a wrong value");
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

TEST(ApiErrors, BadArgumentsAreRejectedAndTheCommunicatorStaysUsable) {
  Watchdog dog(60, "bad arguments");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ccComm_t c = ranks.comm(0);
  float buf[4] = {};

  EXPECT_EQ(ccAllReduce(buf, buf, 4, ccFloat32, ccSum, nullptr, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "comm is NULL")) << ccGetLastError(nullptr);

  EXPECT_EQ(ccAllReduce(nullptr, buf, 4, ccFloat32, ccSum, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "sendbuff is NULL")) << ccGetLastError(c);
  EXPECT_EQ(ccAllReduce(buf, nullptr, 4, ccFloat32, ccSum, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "recvbuff is NULL")) << ccGetLastError(c);
  EXPECT_EQ(ccAllReduce(buf, buf, 4, static_cast<ccDataType_t>(99), ccSum, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "datatype 99")) << ccGetLastError(c);
  EXPECT_EQ(ccAllReduce(buf, buf, 4, ccFloat32, static_cast<ccRedOp_t>(99), c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "op 99")) << ccGetLastError(c);
  EXPECT_EQ(ccAllReduce(buf, buf, 4, ccFloat32, static_cast<ccRedOp_t>(-3), c, nullptr), ccInvalidArgument);
  EXPECT_EQ(ccBroadcast(buf, buf, 4, ccFloat32, 2, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "root 2 is out of range")) << ccGetLastError(c);
  EXPECT_EQ(ccReduce(buf, buf, 4, ccFloat32, ccSum, -1, c, nullptr), ccInvalidArgument);
  EXPECT_EQ(ccSend(buf, 4, ccFloat32, 5, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "peer 5 is out of range")) << ccGetLastError(c);
  EXPECT_EQ(ccRecv(buf, 4, ccFloat32, -1, c, nullptr), ccInvalidArgument);
  EXPECT_EQ(ccAllReduce(buf, buf, 4, ccFloat32, ccSum, c, reinterpret_cast<ccStream_t>(0x1)), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "stream must be NULL")) << ccGetLastError(c);
  EXPECT_EQ(ccAllReduce(buf, buf + 1, 3, ccFloat32, ccSum, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "overlap")) << ccGetLastError(c);
  ccRedOp_t userOp;
  float scalar = 2;
  EXPECT_EQ(ccRedOpCreatePreMulSum(&userOp, &scalar, ccFloat32, ccScalarHostImmediate, c), ccSuccess);
  EXPECT_EQ(ccAllReduce(buf, buf, 4, ccInt32, userOp, c, nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c), "created for float")) << ccGetLastError(c);
  EXPECT_EQ(ccRedOpDestroy(userOp, c), ccSuccess);
  EXPECT_EQ(ccRedOpDestroy(userOp, c), ccInvalidArgument);
  EXPECT_EQ(ccGroupEnd(), ccInvalidUsage);
  int count = 0, rank = -1, device = 0;
  EXPECT_EQ(ccCommCount(c, &count), ccSuccess);
  EXPECT_EQ(ccCommUserRank(c, &rank), ccSuccess);
  EXPECT_EQ(ccCommDevice(c, &device), ccSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(device, CC_DEVICE_HOST);
  EXPECT_EQ(ccCommCount(c, nullptr), ccInvalidArgument);
  ccResult_t async = ccInternalError;
  EXPECT_EQ(ccCommGetAsyncError(c, &async), ccSuccess);
  EXPECT_EQ(async, ccSuccess);

  expectAllReduceWorks(ranks);
}

TEST(ApiErrors, InitArgumentsAndConfig) {
  ccUniqueId id;
  ASSERT_EQ(ccGetUniqueId(&id), ccSuccess);
  ccComm_t comm = nullptr;
  EXPECT_EQ(ccCommInitRank(&comm, 2, id, 2), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "rank 2 is out of range")) << ccGetLastError(nullptr);
  EXPECT_EQ(ccCommInitRank(nullptr, 1, id, 0), ccInvalidArgument);
  ccUniqueId garbage;
  memset(&garbage, 0x42, sizeof(garbage));
  EXPECT_EQ(ccCommInitRank(&comm, 1, garbage, 0), ccInvalidArgument);
  ccConfig_t bad = CC_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ccCommInitRankConfig(&comm, 1, id, 0, &bad), ccInvalidArgument);
  ccConfig_t cfg = CC_CONFIG_INITIALIZER;
  cfg.timeout = -5;
  EXPECT_EQ(ccCommInitRankConfig(&comm, 1, id, 0, &cfg), ccInvalidArgument);
  int version = 0;
  EXPECT_EQ(ccGetVersion(&version), ccSuccess);
  EXPECT_EQ(version, CC_VERSION_CODE);
  EXPECT_STREQ(ccGetErrorString(ccSuccess), "no error");
  EXPECT_TRUE(contains(ccGetErrorString(ccTimeout), "timed out"));
}

TEST(ApiErrors, OneThreadDrivesAllRanksThroughGroups) {
  Watchdog dog(60, "group all-pairs");
  constexpr int n = 4, count = 70000;  // several FIFO steps per transfer
  std::vector<ccComm_t> comms(n);
  ASSERT_EQ(ccCommInitAll(comms.data(), n, nullptr), ccSuccess) << ccGetLastError(nullptr);
  std::vector<std::vector<int>> send(n, std::vector<int>(n * count)), recv(n, std::vector<int>(n * count, -1));
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < count; ++i) send[r][p * count + i] = r * 1000000 + p * 100000 + i % 1000;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p) {
      ASSERT_EQ(ccSend(&send[r][p * count], count, ccInt32, p, comms[r], nullptr), ccSuccess);
      ASSERT_EQ(ccRecv(&recv[r][p * count], count, ccInt32, p, comms[r], nullptr), ccSuccess);
    }
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  for (int r = 0; r < n; ++r)
    for (int p = 0; p < n; ++p)
      for (int i = 0; i < count; ++i) ASSERT_EQ(recv[r][p * count + i], p * 1000000 + r * 100000 + i % 1000);
  // Collectives on every rank from one thread, too.
  std::vector<std::vector<double>> v(n, std::vector<double>(5));
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n; ++r) {
    for (auto& x : v[r]) x = r;
    ASSERT_EQ(ccAllReduce(v[r].data(), v[r].data(), 5, ccFloat64, ccMax, comms[r], nullptr), ccSuccess);
  }
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  for (int r = 0; r < n; ++r)
    for (double x : v[r]) EXPECT_EQ(x, n - 1);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

TEST(ApiErrors, SplitAsThreads) {
  Watchdog dog(60, "split");
  ThreadRanks ranks(5);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    ccComm_t sub = nullptr;
    const int color = rank == 4 ? CC_SPLIT_NOCOLOR : rank % 2;
    if (ccCommSplit(comm, color, -rank, &sub, nullptr) != ccSuccess)
      return ranks.fail(std::string("split failed: ") + ccGetLastError(comm));
    if (color == CC_SPLIT_NOCOLOR) {
      if (sub != nullptr) ranks.fail("NOCOLOR rank got a communicator");
      return;
    }
    int subRank = -1, subCount = 0;
    ccCommUserRank(sub, &subRank);
    ccCommCount(sub, &subCount);
    // Keys are -rank: the highest parent rank of each color comes first.
    const int members = color == 0 ? 2 : 2;  // color 0: ranks 0,2; color 1: ranks 1,3
    const int expectRank = (rank == 2 || rank == 3) ? 0 : 1;
    if (subCount != members || subRank != expectRank)
      ranks.fail("rank " + std::to_string(rank) + " got sub rank " + std::to_string(subRank) + " of " +
                 std::to_string(subCount));
    int v = rank;
    if (ccAllReduce(&v, &v, 1, ccInt32, ccSum, sub, nullptr) != ccSuccess || v != (color == 0 ? 2 : 4))
      ranks.fail("allreduce on the split communicator gave " + std::to_string(v));
    ccCommDestroy(sub);
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

TEST(ApiErrors, MissingPeerTimesOutNamingIt) {
  Watchdog dog(60, "timeout");
  setenv("COLLCOMM_TIMEOUT", "2", 1);
  ThreadRanks ranks(2);
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  std::vector<float> buf(1000, 1.0f);
  const auto start = Clock::now();
  // Rank 1 never joins.
  EXPECT_EQ(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, ranks.comm(0), nullptr), ccTimeout);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(secs, 1.5);
  EXPECT_LT(secs, 10);
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(0)), "rank 1")) << ccGetLastError(ranks.comm(0));
  // Rank 1 now learns rank 0 has left instead of waiting out its own deadline.
  const auto start1 = Clock::now();
  EXPECT_EQ(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, ranks.comm(1), nullptr), ccRemoteError);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start1).count(), 1.5);
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(1)), "rank 0")) << ccGetLastError(ranks.comm(1));
  // A failed communicator says so on the next call.
  EXPECT_NE(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, ranks.comm(0), nullptr), ccSuccess);
  ccResult_t async = ccSuccess;
  EXPECT_EQ(ccCommGetAsyncError(ranks.comm(0), &async), ccSuccess);
  EXPECT_EQ(async, ccTimeout);
}

TEST(ApiErrors, AbortEndsAStuckCollectivePromptly) {
  Watchdog dog(60, "abort");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  std::vector<float> buf(1 << 20, 1.0f);
  ccResult_t result = ccSuccess;
  Clock::time_point returned;
  OpEntry entry(ranks.comm(0));
  std::thread stuck([&] {
    entry.announce();
    result = ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, ranks.comm(0), nullptr);
    returned = Clock::now();
  });
  // Abort only once the allreduce is inside (it cannot finish without rank 1): aborting first
  // would free the communicator under a thread that has not called yet.
  EXPECT_TRUE(entry.waitInside()) << "the allreduce did not start";
  const auto abortAt = Clock::now();
  EXPECT_EQ(ccCommAbort(ranks.comm(0)), ccSuccess);
  const auto abortDone = Clock::now();
  stuck.join();
  ranks.forget(0);
  EXPECT_NE(result, ccSuccess);
  EXPECT_LT(std::chrono::duration<double>(abortDone - abortAt).count(), 1.0);
  EXPECT_LT(std::chrono::duration<double>(returned - abortAt).count(), 1.0);
}

// ccCommRevoke from another thread stops the call in flight like ccCommAbort does, but keeps the
// handle: the stuck call and later ones fail with a sentence readable through it, and it is freed
// only by the ccCommAbort that follows (what a framework's abort() needs: its worker may be
// about to call in when the abort comes).
TEST(ApiErrors, RevokeEndsAStuckCollectiveAndKeepsTheHandle) {
  Watchdog dog(60, "revoke");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccComm_t comm = ranks.comm(0);
  EXPECT_EQ(ccCommRevoke(comm, 1), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(comm), "CC_REVOKE_DEFAULT")) << ccGetLastError(comm);
  EXPECT_EQ(ccCommRevoke(nullptr, CC_REVOKE_DEFAULT), ccInvalidArgument);
  std::vector<float> buf(1 << 20, 1.0f);
  ccResult_t result = ccSuccess;
  Clock::time_point returned;
  OpEntry entry(comm);
  std::thread stuck([&] {
    entry.announce();
    result = ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comm, nullptr);
    returned = Clock::now();
  });
  EXPECT_TRUE(entry.waitInside()) << "the allreduce did not start";
  const auto revokeAt = Clock::now();
  EXPECT_EQ(ccCommRevoke(comm, CC_REVOKE_DEFAULT), ccSuccess);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - revokeAt).count(), 0.1);
  stuck.join();
  EXPECT_EQ(result, ccInvalidUsage);
  EXPECT_LT(std::chrono::duration<double>(returned - revokeAt).count(), 1.0);
  EXPECT_TRUE(contains(ccGetLastError(comm), "ccCommRevoke")) << ccGetLastError(comm);
  // Still a live handle: a later call is refused with a sentence, and revoking again is harmless.
  EXPECT_EQ(ccAllReduce(buf.data(), buf.data(), 1, ccFloat32, ccSum, comm, nullptr), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(comm), "revoked")) << ccGetLastError(comm);
  int count = 0;
  EXPECT_EQ(ccCommCount(comm, &count), ccSuccess);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(ccCommRevoke(comm, CC_REVOKE_DEFAULT), ccSuccess);
  EXPECT_EQ(ccCommAbort(comm), ccSuccess);
  ranks.forget(0);
}

TEST(ApiErrors, MismatchedCountsAreReportedNotReduced) {
  Watchdog dog(60, "mismatch");
  setenv("COLLCOMM_PROTO", "Simple", 1);
  setenv("COLLCOMM_TIMEOUT", "5", 1);
  ThreadRanks ranks(2);
  unsetenv("COLLCOMM_PROTO");
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  std::vector<ccResult_t> res(2);
  ranks.run([&](int rank, ccComm_t comm) {
    std::vector<float> buf(rank == 0 ? 1000 : 1200, 1.0f);
    res[rank] = ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comm, nullptr);
  });
  EXPECT_NE(res[0], ccSuccess);
  EXPECT_NE(res[1], ccSuccess);
  const bool named = contains(ccGetLastError(ranks.comm(0)), "different counts") ||
                     contains(ccGetLastError(ranks.comm(1)), "different counts");
  EXPECT_TRUE(named) << ccGetLastError(ranks.comm(0)) << " / " << ccGetLastError(ranks.comm(1));
}

}  // namespace
}  // namespace collcomm::test
