// NCCL's ways of making and driving several ranks from one thread: non-blocking communicators
// (config.blocking = 0: calls return ccInProgress, ccCommGetAsyncError says when the work is done,
// finalize/destroy/abort at every stage), and several ranks' ccCommInitRank inside
// ccGroupStart/End, blocking and non-blocking; ccBcast; device requests this build cannot serve.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collcomm.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const char* text, const char* part) { return text != nullptr && strstr(text, part) != nullptr; }

// Polls until the communicator's queued work is done; the watchdog bounds it.
ccResult_t settle(ccComm_t comm) {
  ccResult_t state = ccInProgress;
  while (state == ccInProgress) {
    if (ccCommGetAsyncError(comm, &state) != ccSuccess) return ccInternalError;
    if (state == ccInProgress) std::this_thread::yield();
  }
  return state;
}

void expectAllSettleOk(const std::vector<ccComm_t>& comms) {
  for (size_t r = 0; r < comms.size(); ++r)
    EXPECT_EQ(settle(comms[r]), ccSuccess) << "rank " << r << ": " << ccGetLastError(comms[r]);
}

// Every rank from this thread, with the calls' results as non-blocking communicators give them:
// an exact-valued allreduce, a send/recv ring without a group, and a ccBcast.
void driveFromOneThread(const std::vector<ccComm_t>& comms) {
  const int n = static_cast<int>(comms.size());
  const size_t count = 1001;
  std::vector<std::vector<int32_t>> buf(n, std::vector<int32_t>(count));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) buf[r][i] = r * 1000 + static_cast<int32_t>(i);
  for (int r = 0; r < n; ++r) {
    const ccResult_t res = ccAllReduce(buf[r].data(), buf[r].data(), count, ccInt32, ccSum, comms[r], nullptr);
    ASSERT_TRUE(res == ccInProgress || res == ccSuccess) << ccGetErrorString(res) << ": " << ccGetLastError(comms[r]);
  }
  expectAllSettleOk(comms);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(buf[r][i], 1000 * n * (n - 1) / 2 + n * static_cast<int32_t>(i)) << "rank " << r << " index " << i;

  // A ring of sends and receives without a group: the ranks' queues progress together on their
  // workers. As in NCCL, a send outside a group waits for its receive: even ranks send first, odd
  // ones receive first (n is even).
  std::vector<std::vector<double>> out(n, std::vector<double>(count)), in(n, std::vector<double>(count, -1));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) out[r][i] = r + i * 0.5;
  for (int r = 0; r < n; ++r) {
    for (int step = 0; step < 2; ++step) {
      const ccResult_t res = (step == r % 2)
                                 ? ccSend(out[r].data(), count, ccFloat64, (r + 1) % n, comms[r], nullptr)
                                 : ccRecv(in[r].data(), count, ccFloat64, (r + n - 1) % n, comms[r], nullptr);
      EXPECT_EQ(res, ccInProgress) << ccGetLastError(comms[r]);
    }
  }
  expectAllSettleOk(comms);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(in[r][i], (r + n - 1) % n + i * 0.5) << "rank " << r;

  // ccBcast: in place, root n-1.
  std::vector<std::vector<uint8_t>> b(n, std::vector<uint8_t>(37));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < b[r].size(); ++i) b[r][i] = r == n - 1 ? static_cast<uint8_t>(i * 7) : 0xee;
  for (int r = 0; r < n; ++r)
    EXPECT_NE(ccBcast(b[r].data(), b[r].size(), ccUint8, n - 1, comms[r], nullptr), ccInvalidArgument);
  expectAllSettleOk(comms);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < b[r].size(); ++i) ASSERT_EQ(b[r][i], static_cast<uint8_t>(i * 7)) << "rank " << r;
}

void finalizeAndDestroy(const std::vector<ccComm_t>& comms) {
  for (ccComm_t c : comms) {
    const ccResult_t res = ccCommFinalize(c);
    EXPECT_TRUE(res == ccSuccess || res == ccInProgress) << ccGetErrorString(res);
  }
  expectAllSettleOk(comms);
  int v = 0;
  EXPECT_EQ(ccAllReduce(&v, &v, 1, ccInt32, ccSum, comms[0], nullptr), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(comms[0]), "finalized")) << ccGetLastError(comms[0]);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

// Every test starts from a fresh id and a non-blocking config, under a watchdog.
class NonBlockingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(ccGetUniqueId(&id_), ccSuccess);
    cfg_.blocking = 0;
  }
  Watchdog dog_{120, ::testing::UnitTest::GetInstance()->current_test_info()->name()};
  ccUniqueId id_;
  ccConfig_t cfg_ = CC_CONFIG_INITIALIZER;
};

class NonBlocking : public NonBlockingTest, public ::testing::WithParamInterface<int> {
 protected:
  const int n_ = GetParam();
};

TEST_P(NonBlocking, InitFromOneThreadThenOperationsCompleteThroughGetAsyncError) {
  std::vector<ccComm_t> comms(n_, nullptr);
  for (int r = 0; r < n_; ++r) {
    // No rank's init can finish before the last has started: each returns at once.
    ASSERT_EQ(ccCommInitRankConfig(&comms[r], n_, id_, r, &cfg_), ccInProgress) << ccGetLastError(nullptr);
    ASSERT_NE(comms[r], nullptr);
    int count = 0, rank = -1;
    EXPECT_EQ(ccCommCount(comms[r], &count), ccSuccess);
    EXPECT_EQ(ccCommUserRank(comms[r], &rank), ccSuccess);
    EXPECT_EQ(count, n_);
    EXPECT_EQ(rank, r);
  }
  expectAllSettleOk(comms);
  driveFromOneThread(comms);
  finalizeAndDestroy(comms);
}

TEST_P(NonBlocking, OperationsQueuedBehindTheInitRunAfterIt) {
  std::vector<ccComm_t> comms(n_, nullptr);
  std::vector<float> v(n_);
  for (int r = 0; r < n_; ++r) {
    ASSERT_EQ(ccCommInitRankConfig(&comms[r], n_, id_, r, &cfg_), ccInProgress);
    v[r] = static_cast<float>(r + 1);
    // Queued before the init has finished (it cannot have: later ranks have not started).
    ASSERT_EQ(ccAllReduce(&v[r], &v[r], 1, ccFloat32, ccMax, comms[r], nullptr), ccInProgress);
  }
  expectAllSettleOk(comms);
  for (int r = 0; r < n_; ++r) EXPECT_EQ(v[r], static_cast<float>(n_));
  // Destroy with nothing flushed first.
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

TEST_P(NonBlocking, InitInsideAGroupFromOneThread) {
  std::vector<ccComm_t> comms(n_, nullptr);
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n_; ++r) {
    ASSERT_EQ(ccCommInitRankConfig(&comms[r], n_, id_, r, &cfg_), ccSuccess);
    ASSERT_NE(comms[r], nullptr);  // the handle exists before the group ends, as in NCCL
  }
  ASSERT_EQ(ccGroupEnd(), ccInProgress);
  expectAllSettleOk(comms);
  // Operations of every rank in one group.
  std::vector<std::vector<int64_t>> buf(n_, std::vector<int64_t>(5));
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n_; ++r) {
    for (auto& x : buf[r]) x = int64_t{1} << r;
    ASSERT_EQ(ccAllReduce(buf[r].data(), buf[r].data(), 5, ccInt64, ccSum, comms[r], nullptr), ccSuccess);
  }
  ASSERT_EQ(ccGroupEnd(), ccInProgress);
  expectAllSettleOk(comms);
  for (int r = 0; r < n_; ++r)
    for (int64_t x : buf[r]) EXPECT_EQ(x, (int64_t{1} << n_) - 1);
  driveFromOneThread(comms);
  finalizeAndDestroy(comms);
}

TEST_P(NonBlocking, BlockingInitInsideAGroupFromOneThread) {
  std::vector<ccComm_t> comms(n_, nullptr);
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n_; ++r) ASSERT_EQ(ccCommInitRank(&comms[r], n_, id_, r), ccSuccess);
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  for (int r = 0; r < n_; ++r) {
    ccResult_t state = ccInternalError;
    EXPECT_EQ(ccCommGetAsyncError(comms[r], &state), ccSuccess);
    EXPECT_EQ(state, ccSuccess);
  }
  // Init and first operations in one group: each communicator's share runs init first.
  std::vector<ccComm_t> second(n_, nullptr);
  ASSERT_EQ(ccGetUniqueId(&id_), ccSuccess);
  std::vector<std::vector<float>> buf(n_, std::vector<float>(300));
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < n_; ++r) {
    ASSERT_EQ(ccCommInitRank(&second[r], n_, id_, r), ccSuccess);
    for (auto& x : buf[r]) x = static_cast<float>(r);
    ASSERT_EQ(ccAllReduce(buf[r].data(), buf[r].data(), buf[r].size(), ccFloat32, ccSum, second[r], nullptr),
              ccSuccess);
  }
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  for (int r = 0; r < n_; ++r)
    for (float x : buf[r]) EXPECT_EQ(x, n_ * (n_ - 1) / 2.0f);
  for (ccComm_t c : second) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

// Every rank's ccCommSplit from one thread inside a group, blocking and non-blocking parents: the
// split runs with the parent's share; a non-blocking one is done when the parent says so.
TEST_P(NonBlocking, SplitEveryRankFromOneThreadInAGroup) {
  for (const int blocking : {1, 0}) {
    cfg_.blocking = blocking;
    ASSERT_EQ(ccGetUniqueId(&id_), ccSuccess);
    std::vector<ccComm_t> comms(n_, nullptr), subs(n_, nullptr);
    ASSERT_EQ(ccGroupStart(), ccSuccess);
    for (int r = 0; r < n_; ++r) ASSERT_EQ(ccCommInitRankConfig(&comms[r], n_, id_, r, &cfg_), ccSuccess);
    ASSERT_EQ(ccGroupEnd(), blocking ? ccSuccess : ccInProgress) << ccGetLastError(nullptr);
    expectAllSettleOk(comms);
    ASSERT_EQ(ccGroupStart(), ccSuccess);
    // Two colors; keys reverse the order within each.
    for (int r = 0; r < n_; ++r) ASSERT_EQ(ccCommSplit(comms[r], r % 2, -r, &subs[r], nullptr), ccSuccess);
    ASSERT_EQ(ccGroupEnd(), blocking ? ccSuccess : ccInProgress) << ccGetLastError(nullptr);
    expectAllSettleOk(comms);
    std::vector<int32_t> v(n_);
    for (int r = 0; r < n_; ++r) {
      ASSERT_NE(subs[r], nullptr);
      int rank = -1, count = 0;
      EXPECT_EQ(ccCommUserRank(subs[r], &rank), ccSuccess);
      EXPECT_EQ(ccCommCount(subs[r], &count), ccSuccess);
      EXPECT_EQ(count, n_ / 2);
      EXPECT_EQ(rank, (n_ - 1 - r) / 2);
      v[r] = r;
    }
    ASSERT_EQ(ccGroupStart(), ccSuccess);
    for (int r = 0; r < n_; ++r) ASSERT_EQ(ccAllReduce(&v[r], &v[r], 1, ccInt32, ccSum, subs[r], nullptr), ccSuccess);
    ASSERT_EQ(ccGroupEnd(), blocking ? ccSuccess : ccInProgress) << ccGetLastError(nullptr);
    expectAllSettleOk(subs);
    // Even ranks: 0 + 2 + ... ; odd ranks: 1 + 3 + ...
    for (int r = 0; r < n_; ++r) EXPECT_EQ(v[r], (n_ / 2) * (n_ / 2 - 1) + (r % 2) * (n_ / 2)) << "rank " << r;
    for (ccComm_t c : subs) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
    for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, NonBlocking, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "ranks"; });

// A peer that never joins the operation: the failure arrives through ccCommGetAsyncError, names
// the peer, and the communicator refuses further work.
TEST_F(NonBlockingTest, TimeoutArrivesThroughGetAsyncError) {
  cfg_.timeout = 2;
  std::vector<ccComm_t> comms(2, nullptr);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ccCommInitRankConfig(&comms[r], 2, id_, r, &cfg_), ccInProgress);
  expectAllSettleOk(comms);
  std::vector<float> buf(1000, 1.0f);
  ASSERT_EQ(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comms[0], nullptr), ccInProgress);
  // Queued behind the failing one: never run.
  ASSERT_EQ(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comms[0], nullptr), ccInProgress);
  EXPECT_EQ(settle(comms[0]), ccTimeout);
  EXPECT_TRUE(contains(ccGetLastError(comms[0]), "rank 1")) << ccGetLastError(comms[0]);
  EXPECT_NE(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comms[0], nullptr), ccInProgress);
  EXPECT_EQ(ccCommAbort(comms[0]), ccSuccess);
  EXPECT_EQ(ccCommAbort(comms[1]), ccSuccess);
}

TEST_F(NonBlockingTest, AbortStopsAnInitInProgressPromptly) {
  cfg_.timeout = 5;
  ccComm_t comm = nullptr;
  // Rank 1 never comes: rank 0's init waits for it.
  ASSERT_EQ(ccCommInitRankConfig(&comm, 2, id_, 0, &cfg_), ccInProgress);
  // Polled for a while so that the abort finds the init running (waiting for the root's answer)
  // rather than still queued; the abort must be prompt either way.
  ccResult_t state = ccSuccess;
  for (const auto until = Clock::now() + std::chrono::milliseconds(300); Clock::now() < until;) {
    ASSERT_EQ(ccCommGetAsyncError(comm, &state), ccSuccess);
    ASSERT_EQ(state, ccInProgress);
    std::this_thread::yield();
  }
  const auto start = Clock::now();
  EXPECT_EQ(ccCommAbort(comm), ccSuccess);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
}

TEST_F(NonBlockingTest, AbortStopsAnOperationInProgressPromptly) {
  std::vector<ccComm_t> comms(2, nullptr);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ccCommInitRankConfig(&comms[r], 2, id_, r, &cfg_), ccInProgress);
  expectAllSettleOk(comms);
  std::vector<float> buf(1 << 20, 1.0f);
  ASSERT_EQ(ccAllReduce(buf.data(), buf.data(), buf.size(), ccFloat32, ccSum, comms[0], nullptr), ccInProgress);
  ccResult_t state = ccSuccess;
  ASSERT_EQ(ccCommGetAsyncError(comms[0], &state), ccSuccess);
  EXPECT_EQ(state, ccInProgress);  // rank 1 never joins
  const auto start = Clock::now();
  EXPECT_EQ(ccCommAbort(comms[0]), ccSuccess);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0);
  EXPECT_EQ(ccCommDestroy(comms[1]), ccSuccess);
}

TEST_F(NonBlockingTest, CallsThatChangeStateWaitForTheQueue) {
  std::vector<ccComm_t> comms(2, nullptr);
  ASSERT_EQ(ccCommInitRankConfig(&comms[0], 2, id_, 0, &cfg_), ccInProgress);
  // Rank 0's init cannot finish before rank 1's starts.
  float scalar = 2.0f;
  ccRedOp_t op;
  EXPECT_EQ(ccRedOpCreatePreMulSum(&op, &scalar, ccFloat32, ccScalarHostImmediate, comms[0]), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(comms[0]), "in progress")) << ccGetLastError(comms[0]);
  EXPECT_EQ(ccCommFinalize(comms[0]), ccInProgress);  // legal during init; operations may not follow
  ASSERT_EQ(ccCommInitRankConfig(&comms[1], 2, id_, 1, &cfg_), ccInProgress);
  expectAllSettleOk(comms);
  EXPECT_EQ(ccRedOpCreatePreMulSum(&op, &scalar, ccFloat32, ccScalarHostImmediate, comms[1]), ccSuccess);
  EXPECT_EQ(ccRedOpDestroy(op, comms[1]), ccSuccess);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

TEST_F(NonBlockingTest, DestroyDuringInitWaitsForIt) {
  std::vector<ccComm_t> comms(3, nullptr);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(ccCommInitRankConfig(&comms[r], 3, id_, r, &cfg_), ccInProgress);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

TEST_F(NonBlockingTest, BlockingAndNonBlockingCannotShareAGroup) {
  ccUniqueId b;
  ASSERT_EQ(ccGetUniqueId(&b), ccSuccess);
  ccComm_t nb = nullptr, bl = nullptr;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  EXPECT_EQ(ccCommInitRankConfig(&nb, 1, id_, 0, &cfg_), ccSuccess);
  EXPECT_EQ(ccCommInitRank(&bl, 1, b, 0), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "cannot share a group")) << ccGetLastError(nullptr);
  EXPECT_EQ(ccGroupEnd(), ccInProgress);
  EXPECT_EQ(settle(nb), ccSuccess) << ccGetLastError(nb);
  EXPECT_EQ(ccCommDestroy(nb), ccSuccess);
}

// A build with CUDA makes GPU communicators for CUDA ordinals (tests/unit/gpu); one without refuses
// them with a sentence.
TEST(DeviceRequests, CudaOrdinalsAreRefusedWithASentence) {
  ccUniqueId id;
  ASSERT_EQ(ccGetUniqueId(&id), ccSuccess);
  ccConfig_t cfg = CC_CONFIG_INITIALIZER;
  ccComm_t comm = nullptr;
  ccComm_t comms[2] = {nullptr, nullptr};
#if !CC_HAVE_CUDA
  cfg.device = 0;
  EXPECT_EQ(ccCommInitRankConfig(&comm, 1, id, 0, &cfg), ccInvalidUsage);
  EXPECT_EQ(comm, nullptr);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "no CUDA executor")) << ccGetLastError(nullptr);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "CC_DEVICE_HOST")) << ccGetLastError(nullptr);
  const int cuda[2] = {0, 1};
  EXPECT_EQ(ccCommInitAll(comms, 2, cuda), ccInvalidUsage);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "devlist[0] = 0")) << ccGetLastError(nullptr);
  EXPECT_EQ(comms[0], nullptr);
#endif
  cfg.device = -7;
  EXPECT_EQ(ccCommInitRankConfig(&comm, 1, id, 0, &cfg), ccInvalidArgument);

  Watchdog dog(60, "host devlist");
  const int host[2] = {CC_DEVICE_HOST, CC_DEVICE_HOST};
  ASSERT_EQ(ccCommInitAll(comms, 2, host), ccSuccess) << ccGetLastError(nullptr);
  for (ccComm_t c : comms) {
    int device = 0;
    EXPECT_EQ(ccCommDevice(c, &device), ccSuccess);
    EXPECT_EQ(device, CC_DEVICE_HOST);
  }
  // ccBcast from one thread through a blocking group, root 0.
  std::vector<std::vector<uint16_t>> b(2, std::vector<uint16_t>(1001, 0));
  for (size_t i = 0; i < b[0].size(); ++i) b[0][i] = static_cast<uint16_t>(i * 3 + 1);
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  // 16-bit elements as ccFloat16: a broadcast copies their bits.
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ccBcast(b[r].data(), b[r].size(), ccFloat16, 0, comms[r], nullptr), ccSuccess);
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(nullptr);
  EXPECT_EQ(b[1], b[0]);
  for (ccComm_t c : comms) EXPECT_EQ(ccCommDestroy(c), ccSuccess);
}

}  // namespace
}  // namespace collcomm::test
