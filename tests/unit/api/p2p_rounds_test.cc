// AlltoAll, Gather and Scatter beyond the transfers one run may take (COLLCOMM_P2P_MAX_TRANSFERS;
// a GPU kernel's 32): core runs them in rounds of peers at equal distance (core/p2p_rounds.h).
// The rounds' pairing is checked on its own, then the collectives run split on thread ranks, bit
// for bit; send/recv groups beyond the limit are refused on every rank.
#include "core/p2p_rounds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/coll_check.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using detail::ExecTransfer;

// The transfers core expands `coll` into on `rank` (core/enqueue.cc expandP2p's shape).
std::vector<ExecTransfer> transfersOf(Coll coll, int rank, int nranks, int root) {
  std::vector<ExecTransfer> out;
  auto add = [&](bool isSend, int peer) { out.push_back(ExecTransfer{isSend, peer, nullptr, 8, nullptr, nullptr, 0}); };
  for (int p = 0; p < nranks; ++p) {
    if (coll == Coll::kAlltoAll) {
      add(true, p);
      add(false, p);
    }
    if (coll == Coll::kGather && rank == root) add(false, p);
    if (coll == Coll::kScatter && rank == root) add(true, p);
  }
  if (coll == Coll::kGather) add(true, root);
  if (coll == Coll::kScatter) add(false, root);
  return out;
}

TEST(P2pRounds, EveryRoundFitsAndIsClosedAmongTheRanks) {
  for (Coll coll : {Coll::kAlltoAll, Coll::kGather, Coll::kScatter})
    for (int nranks : {2, 5, 8, 17})
      for (size_t perRun : {size_t{2}, size_t{3}, size_t{4}, size_t{6}, size_t{32}}) {
        const int root = nranks / 2;
        const std::string what =
            std::string(collLabel(coll)) + " nranks=" + std::to_string(nranks) + " perRun=" + std::to_string(perRun);
        // rounds[r][k]: rank r's round k, indexed by the round's first distance so that empty
        // rounds (left out) still line up across ranks.
        const size_t span = std::max<size_t>(perRun / 2, 1);
        std::vector<std::vector<std::vector<ExecTransfer>>> byRound(nranks);
        for (int r = 0; r < nranks; ++r) {
          const auto all = transfersOf(coll, r, nranks, root);
          size_t total = 0;
          byRound[r].resize((nranks + span - 1) / span);
          for (const auto& round : detail::p2pRounds(all, r, nranks, perRun)) {
            ASSERT_FALSE(round.empty()) << what;
            ASSERT_LE(round.size(), std::max<size_t>(perRun, 2)) << what;
            const ExecTransfer& first = round.front();
            const int d = ((first.isSend ? first.peer - r : r - first.peer) % nranks + nranks) % nranks;
            const size_t k = static_cast<size_t>(d) / span;
            ASSERT_TRUE(byRound[r][k].empty()) << what << ": two rounds of rank " << r << " at " << k;
            byRound[r][k] = round;
            total += round.size();
          }
          EXPECT_EQ(total, all.size()) << what << ": rank " << r << " lost or doubled a transfer";
        }
        // A send in rank r's round k is received in its peer's round k, and the other way round.
        for (int r = 0; r < nranks; ++r)
          for (size_t k = 0; k < byRound[r].size(); ++k)
            for (const ExecTransfer& t : byRound[r][k]) {
              int matches = 0;
              for (const ExecTransfer& u : byRound[t.peer][k]) matches += u.isSend != t.isSend && u.peer == r;
              EXPECT_GE(matches, 1) << what << ": rank " << r << " round " << k
                                    << (t.isSend ? " sends to " : " receives from ") << t.peer
                                    << ", which has no partner in its round " << k;
            }
      }
}

TEST(P2pRounds, DistanceZeroSharesTheFirstRound) {
  const auto all = transfersOf(Coll::kAlltoAll, 3, 8, 0);
  const auto rounds = detail::p2pRounds(all, 3, 8, 4);
  ASSERT_EQ(rounds.size(), 4u);
  int selfSends = 0, selfRecvs = 0;
  for (const ExecTransfer& t : rounds[0]) {
    selfSends += t.isSend && t.peer == 3;
    selfRecvs += !t.isSend && t.peer == 3;
  }
  EXPECT_EQ(selfSends, 1);
  EXPECT_EQ(selfRecvs, 1);
}

// Sets COLLCOMM_P2P_MAX_TRANSFERS (and a short timeout) for one scope.
class PerRunLimit {
 public:
  explicit PerRunLimit(const char* perRun) {
    setenv("COLLCOMM_P2P_MAX_TRANSFERS", perRun, 1);
    setenv("COLLCOMM_TIMEOUT", "60", 1);
  }
  ~PerRunLimit() {
    unsetenv("COLLCOMM_P2P_MAX_TRANSFERS");
    unsetenv("COLLCOMM_TIMEOUT");
  }
};

struct RoundsParam {
  int nranks;
  const char* perRun;
};

class P2pRoundsRun : public ::testing::TestWithParam<RoundsParam> {};

TEST_P(P2pRoundsRun, AlltoAllGatherAndScatterExactInRounds) {
  const RoundsParam p = GetParam();
  runWithWatchdog(240, [&] {
    PerRunLimit limit(p.perRun);
    ThreadRanks ranks(p.nranks);
    ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
    std::vector<CaseSpec> cases;
    for (ccDataType_t dt : {ccInt8, ccFloat64})  // byte-wise moves: the type only scales the sizes
      for (size_t count : {size_t{0}, size_t{1}, size_t{1001}}) {
        cases.push_back({Coll::kAlltoAll, dt, ccSum, count, false, 0});
        for (int root : {0, p.nranks - 1})
          for (bool inPlace : {false, true}) {
            cases.push_back({Coll::kGather, dt, ccSum, count, inPlace, root});
            cases.push_back({Coll::kScatter, dt, ccSum, count, inPlace, root});
          }
      }
    cases.push_back({Coll::kAlltoAll, ccUint8, ccSum, size_t{3} << 20, false, 0});  // many FIFO steps a transfer
    ranks.run([&](int rank, ccComm_t comm) {
      for (const CaseSpec& c : cases)
        if (std::string f = runCase(comm, rank, p.nranks, c); !f.empty()) return ranks.fail(f);
    });
    EXPECT_TRUE(ranks.ok()) << ranks.failures();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, P2pRoundsRun,
                         ::testing::Values(RoundsParam{5, "2"}, RoundsParam{5, "4"}, RoundsParam{8, "6"}),
                         [](const ::testing::TestParamInfo<RoundsParam>& info) {
                           return std::to_string(info.param.nranks) + "ranks_" + info.param.perRun + "perRun";
                         });

// A group of several collectives runs them one after another, each in its rounds.
TEST(P2pRoundsGroup, AlltoAllGatherAndScatterInOneGroupExact) {
  runWithWatchdog(120, [] {
    PerRunLimit limit("4");
    constexpr int kRanks = 5;
    constexpr size_t kCount = 333;
    ThreadRanks ranks(kRanks);
    ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
    ranks.run([&](int rank, ccComm_t comm) {
      // a2aIn[p * kCount + i] = what `rank` sends to p; gathered at root 1; scattered from root 3.
      auto value = [](int from, int to, size_t i) { return static_cast<int32_t>(from * 1000003 + to * 1009 + i); };
      std::vector<int32_t> a2aIn(kRanks * kCount), a2aOut(kRanks * kCount, -1);
      std::vector<int32_t> gatherIn(kCount), gatherOut(kRanks * kCount, -1);
      std::vector<int32_t> scatterIn(kRanks * kCount), scatterOut(kCount, -1);
      for (int p = 0; p < kRanks; ++p)
        for (size_t i = 0; i < kCount; ++i) {
          a2aIn[p * kCount + i] = value(rank, p, i);
          scatterIn[p * kCount + i] = value(3, p, i) + 7;
        }
      for (size_t i = 0; i < kCount; ++i) gatherIn[i] = value(rank, 1, i) - 7;
      ccGroupStart();
      ccAlltoAll(a2aIn.data(), a2aOut.data(), kCount, ccInt32, comm, nullptr);
      ccGather(gatherIn.data(), gatherOut.data(), kCount, ccInt32, 1, comm, nullptr);
      ccScatter(scatterIn.data(), scatterOut.data(), kCount, ccInt32, 3, comm, nullptr);
      if (ccGroupEnd() != ccSuccess) return ranks.fail("rank " + std::to_string(rank) + ": " + ccGetLastError(comm));
      for (int p = 0; p < kRanks; ++p)
        for (size_t i = 0; i < kCount; ++i) {
          if (a2aOut[p * kCount + i] != value(p, rank, i))
            return ranks.fail("rank " + std::to_string(rank) + ": AlltoAll's block from " + std::to_string(p) +
                              " differs at " + std::to_string(i));
          if (rank == 1 && gatherOut[p * kCount + i] != value(p, 1, i) - 7)
            return ranks.fail("Gather's block from " + std::to_string(p) + " differs at " + std::to_string(i));
        }
      for (size_t i = 0; i < kCount; ++i)
        if (scatterOut[i] != value(3, rank, i) + 7)
          return ranks.fail("rank " + std::to_string(rank) + ": Scatter's block differs at " + std::to_string(i));
    });
    EXPECT_TRUE(ranks.ok()) << ranks.failures();
  });
}

// A send/recv group has no pairing by distance: beyond the limit it is refused, on every rank
// (each makes the same group), with the limit named and nothing moved.
TEST(P2pRoundsGroup, SendRecvGroupBeyondTheLimitIsRefusedOnEveryRank) {
  runWithWatchdog(120, [] {
    PerRunLimit limit("4");
    constexpr int kRanks = 4;
    ThreadRanks ranks(kRanks);
    ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
    ranks.run([&](int rank, ccComm_t comm) {
      std::vector<int32_t> out(kRanks, rank), in(kRanks, -1);
      ccGroupStart();
      for (int p = 0; p < kRanks; ++p) {
        if (p == rank) continue;
        ccSend(&out[p], 1, ccInt32, p, comm, nullptr);
        ccRecv(&in[p], 1, ccInt32, p, comm, nullptr);
      }
      const ccResult_t r = ccGroupEnd();
      const std::string said = ccGetLastError(comm);
      if (r != ccInvalidUsage)
        return ranks.fail("rank " + std::to_string(rank) + ": " + ccGetErrorString(r) + ", not ccInvalidUsage");
      if (said.find("a batch of 6 point-to-point transfers, where COLLCOMM_P2P_MAX_TRANSFERS allows 4") ==
          std::string::npos)
        return ranks.fail("rank " + std::to_string(rank) + ": " + said);
      for (int p = 0; p < kRanks; ++p)
        if (p != rank && in[p] != -1)
          return ranks.fail("rank " + std::to_string(rank) + " received from " + std::to_string(p));
    });
    EXPECT_TRUE(ranks.ok()) << ranks.failures();
  });
}

}  // namespace
}  // namespace collcomm::test
