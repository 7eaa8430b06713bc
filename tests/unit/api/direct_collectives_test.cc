// The single-copy Direct algorithm with ranks as threads (COLLCOMM_ALGO=Direct; the conformance
// sweeps run it over every dtype and op too): results bit-identical on every rank and equal to a
// rank-order reduction of inexact floats, sizes past the reduction scratch, groups driven by one
// thread, calls that disagree, abort. Process ranks: tests/mp (ProcessSweep *_Direct).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/op_signal.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const char* text, const std::string& what) { return std::string(text).find(what) != std::string::npos; }

// Ranks made with COLLCOMM_ALGO=Direct (and `extra` NAME=VALUE settings) in the environment.
struct DirectRanks {
  explicit DirectRanks(int n, std::vector<std::pair<const char*, const char*>> extra = {}) {
    setenv("COLLCOMM_ALGO", "Direct", 1);
    setenv("COLLCOMM_TIMEOUT", "20", 1);
    for (auto& [k, v] : extra) setenv(k, v, 1);
    ranks = std::make_unique<ThreadRanks>(n);
    unsetenv("COLLCOMM_ALGO");
    unsetenv("COLLCOMM_TIMEOUT");
    for (auto& [k, v] : extra) unsetenv(k);
  }
  std::unique_ptr<ThreadRanks> ranks;
};

// Inexact float inputs: a different reduction order would give different bits.
std::vector<float> inputsOf(int rank, size_t n) {
  std::mt19937 gen(1234u + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen) * (1.0f + static_cast<float>(rank) / 3.0f);
  return v;
}

// ((x0 + x1) + x2) + ...: the order every rank must reduce in.
std::vector<float> rankOrderSum(int nranks, size_t n) {
  std::vector<float> sum = inputsOf(0, n);
  for (int r = 1; r < nranks; ++r) {
    const std::vector<float> x = inputsOf(r, n);
    for (size_t i = 0; i < n; ++i) sum[i] += x[i];
  }
  return sum;
}

bool sameBits(const float* a, const float* b, size_t n) { return n == 0 || memcmp(a, b, n * sizeof(float)) == 0; }

class DirectReduce : public ::testing::TestWithParam<int> {};

TEST_P(DirectReduce, RankOrderBitsOnEveryRankInAndOutOfPlace) {
  const int nranks = GetParam();
  Watchdog dog(120, "direct reduce");
  DirectRanks d(nranks);
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  // 0, 1, odd, and past the 256 KiB reduction scratch.
  const size_t counts[] = {0, 1, 3, 1001, 300007};
  ranks.run([&](int rank, ccComm_t comm) {
    for (size_t count : counts) {
      const std::vector<float> want = rankOrderSum(nranks, count * nranks);
      const std::vector<float> in = inputsOf(rank, count * nranks);
      for (bool inPlace : {false, true}) {
        const std::string where = " rank " + std::to_string(rank) + " count " + std::to_string(count) +
                                  (inPlace ? " in place" : " out of place");
        // AllReduce over count * nranks elements.
        std::vector<float> buf = in, out(count * nranks, -7.0f);
        float* dst = inPlace ? buf.data() : out.data();
        if (ccAllReduce(buf.data(), dst, count * nranks, ccFloat32, ccSum, comm, nullptr) != ccSuccess)
          return ranks.fail("AllReduce" + where + ": " + ccGetLastError(comm));
        // Wrong bits are reported and the calls go on (returning would leave the peers waiting).
        if (!sameBits(dst, want.data(), count * nranks)) ranks.fail("AllReduce bits differ" + where);
        // ReduceScatter: block `rank` of the sum.
        buf = in;
        out.assign(count, -7.0f);
        dst = inPlace ? buf.data() + count * rank : out.data();
        if (ccReduceScatter(buf.data(), dst, count, ccFloat32, ccSum, comm, nullptr) != ccSuccess)
          return ranks.fail("ReduceScatter" + where + ": " + ccGetLastError(comm));
        if (!sameBits(dst, want.data() + count * rank, count)) ranks.fail("ReduceScatter bits differ" + where);
      }
    }
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

INSTANTIATE_TEST_SUITE_P(Ranks, DirectReduce, ::testing::Values(2, 3, 5));

TEST(Direct, CopiesWithCrossMemoryAttachDisabledStillRunInProcess) {
  Watchdog dog(60, "direct copies");
  DirectRanks d(3, {{"COLLCOMM_CMA_DISABLE", "1"}});
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ranks.run([&](int rank, ccComm_t comm) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{777}, size_t{1} << 18}) {
      std::vector<int32_t> gathered(count * 3, -1), mine(count);
      for (size_t i = 0; i < count; ++i) mine[i] = static_cast<int32_t>(rank * 1000003 + i);
      if (ccAllGather(mine.data(), gathered.data(), count, ccInt32, comm, nullptr) != ccSuccess)
        return ranks.fail(std::string("AllGather: ") + ccGetLastError(comm));
      for (int r = 0; r < 3; ++r)
        for (size_t i = 0; i < count; ++i)
          if (gathered[r * count + i] != static_cast<int32_t>(r * 1000003 + i))
            return ranks.fail("AllGather rank " + std::to_string(rank) + " block " + std::to_string(r) + " wrong");
      for (int root = 0; root < 3; ++root) {
        std::vector<double> b(count, rank == root ? 0.5 : -1.0);
        for (size_t i = 0; i < count && rank == root; ++i) b[i] = 0.5 + static_cast<double>(i);
        if (ccBroadcast(b.data(), b.data(), count, ccFloat64, root, comm, nullptr) != ccSuccess)
          return ranks.fail(std::string("Broadcast: ") + ccGetLastError(comm));
        for (size_t i = 0; i < count; ++i)
          if (b[i] != 0.5 + static_cast<double>(i))
            return ranks.fail("Broadcast rank " + std::to_string(rank) + " root " + std::to_string(root) + " wrong");
      }
    }
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

TEST(Direct, OneThreadDrivesEveryRankInAGroup) {
  Watchdog dog(60, "direct group");
  DirectRanks d(4);
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  const size_t count = 4099;
  std::vector<std::vector<uint8_t>> in(4), out(4);
  for (int r = 0; r < 4; ++r) {
    in[r].assign(count, static_cast<uint8_t>(r + 1));
    out[r].assign(count, 0);
  }
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  for (int r = 0; r < 4; ++r)
    ASSERT_EQ(ccAllReduce(in[r].data(), out[r].data(), count, ccUint8, ccMax, ranks.comm(r), nullptr), ccSuccess);
  ASSERT_EQ(ccGroupEnd(), ccSuccess) << ccGetLastError(ranks.comm(0));
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], 4) << "rank " << r << " element " << i;
}

TEST(Direct, CallsThatDisagreeAreInvalidUsageNamingThePeer) {
  Watchdog dog(60, "direct mismatch");
  DirectRanks d(3);
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::vector<ccResult_t> res(3, ccSuccess);
  const auto start = Clock::now();
  ranks.run([&](int rank, ccComm_t comm) {
    const size_t count = rank == 2 ? 48 : 40;
    std::vector<float> send(count, 1.0f), recv(count * 3);
    res[rank] = ccAllGather(send.data(), recv.data(), count, ccFloat32, comm, nullptr);
  });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10.0);
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(res[r], ccInvalidUsage) << "rank " << r << ": " << ccGetLastError(ranks.comm(r));
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(0)), "rank 2")) << ccGetLastError(ranks.comm(0));
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(0)), "count 48")) << ccGetLastError(ranks.comm(0));
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(2)), "rank 0")) << ccGetLastError(ranks.comm(2));
}

TEST(Direct, RootsThatDisagreeAreInvalidUsage) {
  Watchdog dog(60, "direct root mismatch");
  DirectRanks d(2);
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::vector<ccResult_t> res(2, ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    std::vector<int64_t> buf(100, rank);
    res[rank] = ccBroadcast(buf.data(), buf.data(), buf.size(), ccInt64, rank, comm, nullptr);
  });
  EXPECT_EQ(res[0], ccInvalidUsage) << ccGetLastError(ranks.comm(0));
  EXPECT_EQ(res[1], ccInvalidUsage) << ccGetLastError(ranks.comm(1));
  EXPECT_TRUE(contains(ccGetLastError(ranks.comm(0)), "rank 1")) << ccGetLastError(ranks.comm(0));
}

TEST(Direct, AbortEndsAWaitingRankPromptly) {
  Watchdog dog(60, "direct abort");
  DirectRanks d(2);
  ThreadRanks& ranks = *d.ranks;
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::vector<float> send(1 << 16, 1.0f), recv(2 << 16);
  ccResult_t result = ccSuccess;
  Clock::time_point returned;
  OpEntry entry(ranks.comm(0));
  std::thread stuck([&] {
    entry.announce();
    result = ccAllGather(send.data(), recv.data(), send.size(), ccFloat32, ranks.comm(0), nullptr);
    returned = Clock::now();
  });
  // Abort only once the allgather is inside (it cannot finish without rank 1): aborting first
  // would free the communicator under a thread that has not called yet.
  EXPECT_TRUE(entry.waitInside()) << "the allgather did not start";
  const auto abortAt = Clock::now();
  EXPECT_EQ(ccCommAbort(ranks.comm(0)), ccSuccess);
  stuck.join();
  ranks.forget(0);
  EXPECT_NE(result, ccSuccess);
  EXPECT_LT(std::chrono::duration<double>(returned - abortAt).count(), 1.0);
}

}  // namespace
}  // namespace collcomm::test
