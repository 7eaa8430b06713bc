// Ranks that make different calls with steps of the same size (another type of the same width,
// another reduction, another root, another collective): every Simple step carries the sender's
// call (device/call_tag.h), so the receiver fails the operation with ccInvalidUsage naming both
// calls, instead of reducing the peer's bytes into a wrong answer (types, reductions) or waiting
// for COLLCOMM_TIMEOUT (a Broadcast's roots, kinds). Each algorithm that reduces is forced in turn
// on thread ranks; a check that let a mismatch through would show as a success or a timeout.
// Calls where every rank waits before any step moves (a ring Reduce whose ranks name different
// roots) have nothing to compare: they still end at COLLCOMM_TIMEOUT, as before.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

enum class Kind { kAllReduce, kReduce, kBroadcast, kReduceScatter };

struct Call {
  Kind kind;
  ccDataType_t dtype;
  ccRedOp_t op;
  int root;
};

struct Case {
  const char* name;
  const char* algo;  // COLLCOMM_ALGO
  int nranks;
  Call others;  // every rank but rank 1
  Call rank1;
  const char* said;      // what some rank's sentence must hold: the two calls as it names them
  int mayFinish = -1;    // a rank that only sends (the root of a Broadcast, the start of a Reduce's chain)
  bool overNet = false;  // COLLCOMM_P2P_DISABLE and COLLCOMM_SHM_DISABLE: the steps cross sockets
};

constexpr size_t kCount = 4096;  // elements a rank receives: several steps on every algorithm

ccResult_t make(const Call& c, std::vector<int32_t>& send, std::vector<int32_t>& recv, ccComm_t comm) {
  switch (c.kind) {
    case Kind::kAllReduce:
      return ccAllReduce(send.data(), recv.data(), kCount, c.dtype, c.op, comm, nullptr);
    case Kind::kReduce:
      return ccReduce(send.data(), recv.data(), kCount, c.dtype, c.op, c.root, comm, nullptr);
    case Kind::kBroadcast:
      return ccBroadcast(send.data(), recv.data(), kCount, c.dtype, c.root, comm, nullptr);
    case Kind::kReduceScatter:
      return ccReduceScatter(send.data(), recv.data(), kCount, c.dtype, c.op, comm, nullptr);
  }
  return ccInternalError;
}

// "made another call: X, where this rank made Y" as the rank on the other side of the same
// connection says it: which of two ranks finds the mismatch first is a race (in a ring of three,
// rank 1 receives rank 0's steps and rank 2 receives rank 1's).
std::string theOtherWay(const std::string& said) {
  const std::string head = "made another call: ", mid = ", where this rank made ";
  const size_t m = said.find(mid);
  if (said.rfind(head, 0) != 0 || m == std::string::npos) return said;
  return head + said.substr(m + mid.size()) + mid + said.substr(head.size(), m - head.size());
}

class CallMismatch : public ::testing::TestWithParam<Case> {};

TEST_P(CallMismatch, IsReportedWithBothCallsNotReducedOrWaitedOut) {
  const Case& c = GetParam();
  Watchdog dog(60, c.name);
  setenv("COLLCOMM_ALGO", c.algo, 1);
  setenv("COLLCOMM_PROTO", "Simple", 1);
  setenv("COLLCOMM_TIMEOUT", "20", 1);  // a mismatch that is waited out takes this long
  if (c.overNet) {
    setenv("COLLCOMM_P2P_DISABLE", "1", 1);
    setenv("COLLCOMM_SHM_DISABLE", "1", 1);
  }
  ThreadRanks ranks(c.nranks);
  unsetenv("COLLCOMM_P2P_DISABLE");
  unsetenv("COLLCOMM_SHM_DISABLE");
  unsetenv("COLLCOMM_ALGO");
  unsetenv("COLLCOMM_PROTO");
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::vector<ccResult_t> results(c.nranks, ccSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  ranks.run([&](int rank, ccComm_t comm) {
    std::vector<int32_t> send(kCount * c.nranks, rank + 1), recv(kCount * c.nranks, 0);
    results[rank] = make(rank == 1 ? c.rank1 : c.others, send, recv, comm);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 10.0) << "the ranks waited for the deadline";
  std::string errors;
  bool named = false;
  for (int r = 0; r < c.nranks; ++r) {
    const std::string e = ccGetLastError(ranks.comm(r));
    errors += "\n  rank " + std::to_string(r) + ": " + e;
    if (r != c.mayFinish) {
      EXPECT_NE(results[r], ccSuccess) << "rank " << r;
    }
    EXPECT_NE(results[r], ccTimeout) << "rank " << r << ": " << e;
    named |= results[r] == ccInvalidUsage &&
             (e.find(c.said) != std::string::npos || e.find(theOtherWay(c.said)) != std::string::npos);
  }
  EXPECT_TRUE(named) << "no rank said \"" << c.said << "\" (or the other way round):" << errors;
}

const Call kFloatSum{Kind::kAllReduce, ccFloat32, ccSum, 0};

INSTANTIATE_TEST_SUITE_P(
    Calls, CallMismatch,
    ::testing::Values(
        Case{"RingTypes",
             "Ring",
             3,
             kFloatSum,
             {Kind::kAllReduce, ccInt32, ccSum, 0},
             "made another call: AllReduce of float with Sum, where this rank made AllReduce of int32 with Sum"},
        Case{"RingReductions",
             "Ring",
             3,
             kFloatSum,
             {Kind::kAllReduce, ccFloat32, ccMax, 0},
             "AllReduce of float with Max"},
        Case{"RingBroadcastRoots",
             "Ring",
             3,
             {Kind::kBroadcast, ccInt32, ccSum, 0},
             {Kind::kBroadcast, ccInt32, ccSum, 2},
             "Broadcast from root 2",
             /*mayFinish=*/0},
        Case{"RingReduceTypes",
             "Ring",
             4,
             {Kind::kReduce, ccInt32, ccSum, 3},
             {Kind::kReduce, ccFloat32, ccSum, 3},
             "Reduce of int32 with Sum to root 3",
             /*mayFinish=*/0},
        Case{"RingKinds",
             "Ring",
             2,
             {Kind::kReduceScatter, ccFloat32, ccSum, 0},
             kFloatSum,
             "ReduceScatter of float with Sum"},
        Case{"TreeTypes", "Tree", 4, kFloatSum, {Kind::kAllReduce, ccUint32, ccSum, 0}, "AllReduce of uint32 with Sum"},
        Case{"OneShotTypes",
             "OneShot",
             3,
             kFloatSum,
             {Kind::kAllReduce, ccInt32, ccSum, 0},
             "AllReduce of int32 with Sum"},
        Case{"OneShotTwoRankReductions",
             "OneShot",
             2,
             kFloatSum,
             {Kind::kAllReduce, ccFloat32, ccMin, 0},
             "AllReduce of float with Min"},
        Case{"DirectTypes",
             "Direct",
             3,
             kFloatSum,
             {Kind::kAllReduce, ccInt32, ccSum, 0},
             "AllReduce of int32 with Sum"},
        Case{"NetRingTypes",
             "Ring",
             3,
             kFloatSum,
             {Kind::kAllReduce, ccInt32, ccSum, 0},
             "made another call: AllReduce of float with Sum, where this rank made AllReduce of int32 with Sum",
             -1,
             /*overNet=*/true},
        Case{"NetBroadcastRoots",
             "Ring",
             3,
             {Kind::kBroadcast, ccInt32, ccSum, 0},
             {Kind::kBroadcast, ccInt32, ccSum, 2},
             "Broadcast from root 2",
             /*mayFinish=*/0,
             /*overNet=*/true}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace collcomm::test
