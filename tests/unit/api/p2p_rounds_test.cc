// Point-to-point batches beyond the transfers one run may take (COLLCOMM_P2P_MAX_TRANSFERS; a GPU
// kernel's 32): core runs them in rounds of peers at equal distance (core/p2p_rounds.h). The
// rounds are run on their own as the executors run them (every rank to its end, nothing
// reordered), then collectives and send/recv groups run split on thread ranks, bit for bit.
#include "core/p2p_rounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/coll_check.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using detail::ExecTransfer;

// One batch of point-to-point transfers on every rank. A transfer's buf holds its identity: the
// k-th send from a to b and the k-th receive at b from a (the pair that meet) have the same.
using Batch = std::vector<std::vector<ExecTransfer>>;  // [rank] -> transfers in order

class BatchBuilder {
 public:
  explicit BatchBuilder(int nranks) : batch_(nranks), sent_(nranks * nranks, 0), received_(nranks * nranks, 0) {}
  void send(int from, int to) { add(from, true, to, sent_[from * n() + to]++); }
  void recv(int at, int from) { add(at, false, from, received_[from * n() + at]++); }
  // AlltoAll, Gather and Scatter as core expands them (core/enqueue.cc expandP2p's order).
  void coll(Coll coll, int root) {
    for (int r = 0; r < n(); ++r) {
      for (int p = 0; p < n(); ++p) {
        if (coll == Coll::kAlltoAll) {
          send(r, p);
          recv(r, p);
        }
        if (coll == Coll::kGather && r == root) recv(r, p);
        if (coll == Coll::kScatter && r == root) send(r, p);
      }
      if (coll == Coll::kGather) send(r, root);
      if (coll == Coll::kScatter) recv(r, root);
    }
  }
  const Batch& batch() const { return batch_; }

 private:
  int n() const { return static_cast<int>(batch_.size()); }
  void add(int rank, bool isSend, int peer, size_t k) {
    const int from = isSend ? rank : peer, to = isSend ? peer : rank;
    const uintptr_t id = ((static_cast<uintptr_t>(k) * n() + from) * n() + to) + 1;
    batch_[rank].push_back(ExecTransfer{isSend, peer, reinterpret_cast<void*>(id), 8, nullptr, nullptr, 0});
  }
  Batch batch_;
  std::vector<size_t> sent_, received_;
};

// Splits every rank's batch into rounds and runs them as the executors do: each rank's rounds
// one after another, a round finishing once every transfer in it meets its partner in the peer's
// current round. Fails where a round is too large, a transfer is lost, doubled or reordered
// against another with the same peer and direction, or the ranks stop with rounds left (a wait
// that never ends).
void expectRoundsRun(const Batch& batch, size_t perRun, const std::string& what) {
  const int nranks = static_cast<int>(batch.size());
  std::vector<std::vector<std::vector<ExecTransfer>>> rounds(nranks);
  for (int r = 0; r < nranks; ++r) {
    rounds[r] = detail::p2pRounds(batch[r], r, nranks, perRun);
    std::vector<ExecTransfer> flat;
    for (const auto& round : rounds[r]) {
      ASSERT_FALSE(round.empty()) << what << ": rank " << r << " has an empty round";
      ASSERT_LE(round.size(), perRun) << what << ": rank " << r;
      flat.insert(flat.end(), round.begin(), round.end());
    }
    ASSERT_EQ(flat.size(), batch[r].size()) << what << ": rank " << r << " lost or doubled a transfer";
    // With the same peer and direction, the rounds keep the batch's order (the order they meet in).
    for (int peer = 0; peer < nranks; ++peer)
      for (bool isSend : {false, true}) {
        std::vector<void*> before, after;
        for (const ExecTransfer& t : batch[r])
          if (t.peer == peer && t.isSend == isSend) before.push_back(t.buf);
        for (const ExecTransfer& t : flat)
          if (t.peer == peer && t.isSend == isSend) after.push_back(t.buf);
        ASSERT_EQ(before, after) << what << ": rank " << r << " reordered its transfers with " << peer;
      }
  }
  // A transfer is done once it and its partner have been in their ranks' current rounds together
  // (their kernels ran at the same time); a round ends when all of its transfers are done.
  std::vector<size_t> current(nranks, 0);
  std::set<void*> done;  // identities of the pairs that met
  auto inCurrent = [&](int rank, void* id, bool isSend) {
    if (current[rank] >= rounds[rank].size()) return false;
    for (const ExecTransfer& t : rounds[rank][current[rank]])
      if (t.buf == id && t.isSend == isSend) return true;
    return false;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < nranks; ++r)
      if (current[r] < rounds[r].size())
        for (const ExecTransfer& t : rounds[r][current[r]])
          if (inCurrent(t.peer, t.buf, !t.isSend)) done.insert(t.buf);
    for (int r = 0; r < nranks; ++r) {
      if (current[r] >= rounds[r].size()) continue;
      const auto& round = rounds[r][current[r]];
      if (std::all_of(round.begin(), round.end(), [&](const ExecTransfer& t) { return done.count(t.buf) != 0; })) {
        ++current[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < nranks; ++r)
    EXPECT_EQ(current[r], rounds[r].size()) << what << ": rank " << r << " waits forever in round " << current[r];
}

TEST(P2pRounds, CollectivesRunToTheEndInRoundsThatFit) {
  for (Coll coll : {Coll::kAlltoAll, Coll::kGather, Coll::kScatter})
    for (int nranks : {2, 5, 8, 17})
      for (size_t perRun : {size_t{2}, size_t{3}, size_t{4}, size_t{6}, size_t{32}}) {
        BatchBuilder b(nranks);
        b.coll(coll, nranks / 2);
        expectRoundsRun(
            b.batch(), perRun,
            std::string(collLabel(coll)) + " nranks=" + std::to_string(nranks) + " perRun=" + std::to_string(perRun));
      }
}

// Send/recv groups: several messages to one peer, to itself, in an order of each rank's own, and
// with collectives in the same group.
TEST(P2pRounds, SendRecvGroupsRunToTheEndInRoundsThatFit) {
  std::mt19937 rng(7);
  for (int nranks : {2, 3, 5, 8, 17})
    for (size_t perRun : {size_t{2}, size_t{4}, size_t{7}, size_t{32}})
      for (int trial = 0; trial < 20; ++trial) {
        // messages[a][b]: how many a sends b; each rank posts its sends and receives shuffled,
        // keeping each pair's own order.
        BatchBuilder b(nranks);
        std::vector<std::vector<int>> messages(nranks, std::vector<int>(nranks));
        for (auto& row : messages)
          for (int& m : row) m = static_cast<int>(rng() % 4);
        if (trial % 5 == 1) b.coll(Coll::kAlltoAll, 0);
        for (int r = 0; r < nranks; ++r) {
          std::vector<std::pair<bool, int>> posts;  // (isSend, peer)
          for (int p = 0; p < nranks; ++p) {
            posts.insert(posts.end(), static_cast<size_t>(messages[r][p]), {true, p});
            posts.insert(posts.end(), static_cast<size_t>(messages[p][r]), {false, p});
          }
          std::shuffle(posts.begin(), posts.end(), rng);
          for (const auto& [isSend, peer] : posts) isSend ? b.send(r, peer) : b.recv(r, peer);
        }
        if (trial % 5 == 2) b.coll(Coll::kGather, nranks - 1);
        expectRoundsRun(b.batch(), perRun,
                        "nranks=" + std::to_string(nranks) + " perRun=" + std::to_string(perRun) +
                            " trial=" + std::to_string(trial));
        if (::testing::Test::HasFailure()) return;
      }
}

TEST(P2pRounds, TheKthSendToSelfSharesARoundWithTheKthReceive) {
  BatchBuilder b(8);
  b.coll(Coll::kAlltoAll, 0);
  for (int k = 0; k < 3; ++k) {
    b.send(3, 3);
    b.recv(3, 3);
  }
  for (const auto& round : detail::p2pRounds(b.batch()[3], 3, 8, 4)) {
    int selfSends = 0, selfRecvs = 0;
    for (const ExecTransfer& t : round) {
      selfSends += t.isSend && t.peer == 3;
      selfRecvs += !t.isSend && t.peer == 3;
    }
    EXPECT_EQ(selfSends, selfRecvs);
    EXPECT_LE(selfSends, 1);
  }
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

// A group of several collectives runs in rounds over the whole batch: a collective's transfers with
// a peer come after the one before's (their ordinals).
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

// A send/recv group beyond the limit runs in rounds too: two messages to every rank (itself
// included) and from every rank, posted in an order of each rank's own, arrive bit for bit.
TEST(P2pRoundsGroup, SendRecvGroupBeyondTheLimitRunsExact) {
  runWithWatchdog(120, [] {
    PerRunLimit limit("4");
    constexpr int kRanks = 5;
    constexpr size_t kCount = 1001;
    constexpr int kPerPair = 2;
    ThreadRanks ranks(kRanks);
    ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
    ranks.run([&](int rank, ccComm_t comm) {
      auto value = [](int from, int to, int k, size_t i) {
        return static_cast<int32_t>(from * 1000003 + to * 10007 + k * 101 + i);
      };
      // out[p][k] goes to p as its k-th message from us; in[p][k] is the k-th from p.
      std::vector<std::vector<std::vector<int32_t>>> out(kRanks), in(kRanks);
      std::vector<std::pair<bool, int>> posts;  // (isSend, peer), shuffled by rank
      for (int p = 0; p < kRanks; ++p)
        for (int k = 0; k < kPerPair; ++k) {
          out[p].emplace_back(kCount);
          for (size_t i = 0; i < kCount; ++i) out[p][k][i] = value(rank, p, k, i);
          in[p].emplace_back(kCount, -1);
          posts.push_back({true, p});
          posts.push_back({false, p});
        }
      std::mt19937 rng(static_cast<unsigned>(rank));
      std::shuffle(posts.begin(), posts.end(), rng);
      std::vector<int> sent(kRanks, 0), received(kRanks, 0);
      ccGroupStart();
      for (const auto& [isSend, p] : posts) {
        if (isSend)
          ccSend(out[p][sent[p]++].data(), kCount, ccInt32, p, comm, nullptr);
        else
          ccRecv(in[p][received[p]++].data(), kCount, ccInt32, p, comm, nullptr);
      }
      if (ccGroupEnd() != ccSuccess) return ranks.fail("rank " + std::to_string(rank) + ": " + ccGetLastError(comm));
      for (int p = 0; p < kRanks; ++p)
        for (int k = 0; k < kPerPair; ++k)
          for (size_t i = 0; i < kCount; ++i)
            if (in[p][k][i] != value(p, rank, k, i))
              return ranks.fail("rank " + std::to_string(rank) + ": message " + std::to_string(k) + " from " +
                                std::to_string(p) + " differs at " + std::to_string(i));
    });
    EXPECT_TRUE(ranks.ok()) << ranks.failures();
  });
}

}  // namespace
}  // namespace collcomm::test
