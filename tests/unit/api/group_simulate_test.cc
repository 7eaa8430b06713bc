// ccGroupSimulateEnd: plans and estimates a group without running it, and leaves a group it refuses
// open for ccGroupEnd. The estimates' values come from plan/host_model.cc; these tests check what
// holds whatever the constants: nothing moves, sizes and operations add up as the call documents.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

constexpr float kSentinel = -7.0f;

// The estimate of one AllReduce of `count` floats on `comm`, simulated by this thread alone.
float simulateAllReduce(ccComm_t comm, size_t count) {
  std::vector<float> in(count, 1.0f), out(count, kSentinel);
  ccSimInfo_t info = CC_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ccGroupStart(), ccSuccess);
  EXPECT_EQ(ccAllReduce(in.data(), out.data(), count, ccFloat32, ccSum, comm, nullptr), ccSuccess);
  EXPECT_EQ(ccGroupSimulateEnd(&info), ccSuccess) << ccGetLastError(nullptr);
  for (float v : out) EXPECT_EQ(v, kSentinel) << "a simulated AllReduce wrote its output";
  return info.estimatedTime;
}

TEST(GroupSimulate, RunsNothingAndLeavesTheCommunicatorsUsable) {
  Watchdog dog(60, "group simulate");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  const size_t n = 1024;
  std::vector<std::vector<float>> in(3, std::vector<float>(n)), out(3, std::vector<float>(n, kSentinel));
  for (int r = 0; r < 3; ++r)
    for (size_t i = 0; i < n; ++i) in[r][i] = static_cast<float>(r + 1);
  // One thread queues every rank's AllReduce: ccGroupEnd would run them together; the simulation
  // must not, or it would wait on peers here (the watchdog) or write the outputs.
  ccSimInfo_t info = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < 3; ++r)
    ASSERT_EQ(ccAllReduce(in[r].data(), out[r].data(), n, ccFloat32, ccSum, ranks.comm(r), nullptr), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&info), ccSuccess) << ccGetLastError(nullptr);
  EXPECT_GT(info.estimatedTime, 0.0f);
  for (int r = 0; r < 3; ++r)
    for (float v : out[r]) ASSERT_EQ(v, kSentinel) << "rank " << r << "'s output was written";
  // The group is closed, its operations dropped.
  EXPECT_EQ(ccGroupEnd(), ccInvalidUsage);
  // The communicators still work, and the dropped operations left nothing queued.
  ranks.run([&](int r, ccComm_t comm) {
    if (ccAllReduce(in[r].data(), out[r].data(), n, ccFloat32, ccSum, comm, nullptr) != ccSuccess)
      ranks.fail("rank " + std::to_string(r) + ": " + ccGetLastError(comm));
  });
  ASSERT_TRUE(ranks.ok()) << ranks.failures();
  for (int r = 0; r < 3; ++r)
    for (float v : out[r]) ASSERT_EQ(v, 6.0f);
}

TEST(GroupSimulate, LargerMessagesTakeLongerAndOperationsAddUp) {
  Watchdog dog(60, "group simulate");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  const float small = simulateAllReduce(ranks.comm(0), 256);
  const float large = simulateAllReduce(ranks.comm(0), size_t{4} << 20);
  EXPECT_GT(small, 0.0f);
  EXPECT_GT(large, small);
  // Two operations on one communicator run one after the other: their times add.
  std::vector<float> a(256, 1.0f), b(size_t{4} << 20, 1.0f);
  ccSimInfo_t both = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccAllReduce(a.data(), a.data(), a.size(), ccFloat32, ccSum, ranks.comm(0), nullptr), ccSuccess);
  ASSERT_EQ(ccAllReduce(b.data(), b.data(), b.size(), ccFloat32, ccSum, ranks.comm(0), nullptr), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&both), ccSuccess);
  EXPECT_NEAR(both.estimatedTime, small + large, 1e-3 * (small + large));
  // Two communicators run side by side: the group takes the slower one's time.
  ccSimInfo_t apart = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccAllReduce(a.data(), a.data(), a.size(), ccFloat32, ccSum, ranks.comm(0), nullptr), ccSuccess);
  ASSERT_EQ(ccAllReduce(b.data(), b.data(), b.size(), ccFloat32, ccSum, ranks.comm(1), nullptr), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&apart), ccSuccess);
  EXPECT_NEAR(apart.estimatedTime, large, 1e-3 * large);
}

TEST(GroupSimulate, PointToPointBatchesAndEveryCollective) {
  Watchdog dog(60, "group simulate");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  const size_t n = 4096;
  std::vector<float> buf(3 * n, 1.0f), out(3 * n, kSentinel);
  ccComm_t comm = ranks.comm(0);
  // A send with no receive posted anywhere: simulated, it waits for nobody.
  ccSimInfo_t info = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccSend(buf.data(), n, ccFloat32, 1, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&info), ccSuccess);
  const float send = info.estimatedTime;
  EXPECT_GT(send, 0.0f);
  // A send and a receive of the same size in one batch move at once: no longer than twice one.
  info = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccSend(buf.data(), n, ccFloat32, 1, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccRecv(out.data(), n, ccFloat32, 2, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&info), ccSuccess);
  EXPECT_NEAR(info.estimatedTime, send, 1e-3 * send);
  // Every collective gets an estimate.
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccBroadcast(buf.data(), out.data(), n, ccFloat32, 0, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccReduce(buf.data(), out.data(), n, ccFloat32, ccMax, 1, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccAllGather(buf.data(), out.data(), n, ccFloat32, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccReduceScatter(buf.data(), out.data(), n, ccFloat32, ccSum, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccAlltoAll(buf.data(), out.data(), n, ccFloat32, comm, nullptr), ccSuccess);
  ASSERT_EQ(ccGather(buf.data(), out.data(), n, ccFloat32, 0, comm, nullptr), ccSuccess);
  info = CC_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ccGroupSimulateEnd(&info), ccSuccess) << ccGetLastError(nullptr);
  EXPECT_GT(info.estimatedTime, send);
  for (float v : out) ASSERT_EQ(v, kSentinel);
}

TEST(GroupSimulate, RefusalsSaySoAndLeaveTheGroupOpen) {
  Watchdog dog(60, "group simulate");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccSimInfo_t info = CC_SIM_INFO_INITIALIZER;
  // No group.
  EXPECT_EQ(ccGroupSimulateEnd(&info), ccInvalidUsage);
  EXPECT_NE(std::string(ccGetLastError(nullptr)).find("ccGroupStart"), std::string::npos) << ccGetLastError(nullptr);
  // Not a ccSimInfo_t from the initializer: refused, the group still open.
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  EXPECT_EQ(ccGroupSimulateEnd(nullptr), ccInvalidArgument);
  ccSimInfo_t bad;
  memset(&bad, 0, sizeof(bad));
  EXPECT_EQ(ccGroupSimulateEnd(&bad), ccInvalidArgument);
  EXPECT_NE(std::string(ccGetLastError(nullptr)).find("CC_SIM_INFO_INITIALIZER"), std::string::npos);
  // Nested: the inner end would run nothing either.
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  EXPECT_EQ(ccGroupSimulateEnd(&info), ccInvalidUsage);
  ASSERT_EQ(ccGroupEnd(), ccSuccess);
  ASSERT_EQ(ccGroupSimulateEnd(&info), ccSuccess);
  EXPECT_EQ(info.estimatedTime, 0.0f);  // an empty group takes no time
  // A group that splits communicators is refused and left whole: ccGroupEnd then runs the splits.
  ccComm_t child[2] = {nullptr, nullptr};
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ccCommSplit(ranks.comm(r), 0, r, &child[r], nullptr), ccSuccess);
  EXPECT_EQ(ccGroupSimulateEnd(&info), ccInvalidUsage);
  EXPECT_NE(std::string(ccGetLastError(nullptr)).find("splits"), std::string::npos) << ccGetLastError(nullptr);
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  for (int r = 0; r < 2; ++r) {
    ASSERT_NE(child[r], nullptr);
    int count = 0;
    EXPECT_EQ(ccCommCount(child[r], &count), ccSuccess);
    EXPECT_EQ(count, 2);
    EXPECT_EQ(ccCommDestroy(child[r]), ccSuccess);
  }
}

}  // namespace
}  // namespace collcomm::test
