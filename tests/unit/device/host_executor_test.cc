// The host executor through the executor interface alone (device/executor.h), as core drives it:
// made from an ExecSetup, handed planned collectives and point-to-point batches whose connections
// are made. Two ranks are threads joined by FIFOs laid out in this process's memory, so no
// communicator, bootstrap or transport takes part.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/status.h"
#include "device/executor.h"
#include "device/host/core_distance.h"
#include "device/op_arg.h"
#include "support/fifo_block.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

using test::FifoBlock;

constexpr FifoLayout kLayout{4096, 64};

// Two ranks of one process, each with its executor; `toOne` carries rank 0 -> 1, `toZero` 1 -> 0.
struct Pair {
  FifoBlock toOne{kLayout}, toZero{kLayout};
  SendConn send[2];
  RecvConn recv[2];
  int ring[2] = {0, 1};
  std::atomic<uint32_t> abortFlag{0};
  const char* hosts[2] = {"here", "here"};
  std::unique_ptr<Executor> exec[2];
  ExecPeerConn peers[2][2] = {};

  Pair() {
    for (int r = 0; r < 2; ++r) {
      FifoBlock& out = r == 0 ? toOne : toZero;
      FifoBlock& in = r == 0 ? toZero : toOne;
      bindFifo(send[r], out.mem, kLayout);
      bindFifo(recv[r], in.mem, kLayout);
      send[r].peer = PeerRef{1 - r, -1, true, false, "here", &send[r].ctrl->receiverState, &send[r].ctrl->senderState};
      recv[r].peer = PeerRef{1 - r, -1, true, false, "here", &recv[r].ctrl->senderState, &recv[r].ctrl->receiverState};
      ExecSetup setup{};
      setup.device = CC_DEVICE_HOST;
      setup.rank = r;
      setup.nranks = 2;
      setup.mostRanksOnADevice = 1;
      setup.timeoutSeconds = 30;
      setup.channels = {ExecChannel{&send[r], &recv[r], ring, r}};
      setup.abortFlag = &abortFlag;
      setup.hostNames = hosts;
      setup.peers = {ExecPeer{0, true}, ExecPeer{0, true}};
      EXPECT_TRUE(isOk(makeHostExecutor(setup, &exec[r])));
      peers[r][1 - r] = ExecPeerConn{&send[r], &recv[r]};
    }
  }

  // Runs fn(rank) on two threads and returns their statuses.
  template <class Fn>
  std::vector<Status> onBoth(Fn fn) {
    test::Watchdog dog(60, "two host executors");
    std::vector<Status> s(2, kOk);
    std::thread other([&] { s[1] = fn(1); });
    s[0] = fn(0);
    other.join();
    return s;
  }
};

ExecColl allReduceOf(const float* in, float* out, size_t count, Algorithm algo, Protocol proto) {
  return ExecColl{CollKind::kAllReduce, algo, proto, ccFloat32, makeOpArg(ccSum, ccFloat32, 2), in, out, count, 0, 1};
}

TEST(HostExecutor, AnswersTheInterfaceForHostMemory) {
  Pair pair;
  EXPECT_EQ(pair.exec[0]->maxChannels(), 1);
  EXPECT_TRUE(isOk(pair.exec[0]->checkBuffer(nullptr, 8, "AllReduce", "sendbuff")));
  std::string message;
  EXPECT_TRUE(isOk(pair.exec[0]->failure(pair.hosts, &message)));
}

// The plan's step-streaming choice reads the receivers' verdict on this rank's core through the
// executor: rank 1's verdict on rank 0 (it receives what rank 0 sends) is rank 0's input alone.
TEST(HostExecutor, ReportsWhetherItsReceiversFindItFar) {
  Pair pair;
  EXPECT_FALSE(pair.exec[0]->receiversFindFar(1));
  for (int i = 0; i < 64; ++i) noteWriterLoad(pair.recv[1], distanceThresholds().far * 2);
  EXPECT_TRUE(pair.exec[0]->receiversFindFar(1));
  EXPECT_FALSE(pair.exec[0]->receiversFindFar(0));  // no channel asked about
  EXPECT_FALSE(pair.exec[1]->receiversFindFar(1));
}

// Every algorithm a plan can name for two ranks, through run(), gives the exact sum on both.
TEST(HostExecutor, RunsEveryTwoRankAllReduceAlgorithmExactly) {
  struct Case {
    Algorithm algo;
    Protocol proto;
  };
  for (const Case& c : {Case{Algorithm::kRing, Protocol::kSimple}, Case{Algorithm::kRing, Protocol::kLL},
                        Case{Algorithm::kOneShot, Protocol::kLL}, Case{Algorithm::kDirect, Protocol::kSimple}}) {
    SCOPED_TRACE(algorithmName(c.algo));
    Pair pair;
    const size_t count = 10007;  // many FIFO steps, and an odd tail
    std::vector<float> in[2], out[2];
    for (int r = 0; r < 2; ++r) {
      in[r].resize(count);
      out[r].assign(count, -1.0f);
      for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i % 97) * (r + 1));
    }
    const auto s = pair.onBoth([&](int r) {
      ExecColl coll = allReduceOf(in[r].data(), out[r].data(), count, c.algo, c.proto);
      if (c.algo == Algorithm::kDirect) coll.peers = pair.peers[r];
      ExecFailure failure;
      ExecOp op;
      op.name = "AllReduce";
      op.failure = &failure;
      return pair.exec[r]->run(coll, op);
    });
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(isOk(s[r])) << threadLastError();
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], static_cast<float>((i % 97) * 3)) << "rank " << r;
    }
  }
}

// A batch that sends to and receives from the peer at once, in several transfers, arrives in order.
TEST(HostExecutor, RunsAPointToPointBatchBothWays) {
  Pair pair;
  const size_t bytes[3] = {0, 5000, 12345};
  std::vector<char> sent[2][3], got[2][3];
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) {
      sent[r][k].resize(bytes[k]);
      got[r][k].assign(bytes[k], 0);
      for (size_t i = 0; i < bytes[k]; ++i) sent[r][k][i] = static_cast<char>(i * 7 + k + 31 * r);
    }
  const auto s = pair.onBoth([&](int r) {
    std::vector<ExecTransfer> t;
    for (int k = 0; k < 3; ++k) {
      t.push_back(ExecTransfer{true, 1 - r, sent[r][k].data(), bytes[k], &pair.send[r], nullptr, 0});
      t.push_back(ExecTransfer{false, 1 - r, got[r][k].data(), bytes[k], nullptr, &pair.recv[r], 0});
    }
    ExecOp op;
    op.name = "send/recv group";
    return pair.exec[r]->runP2p(t.data(), t.size(), op);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(isOk(s[r])) << threadLastError();
    for (int k = 0; k < 3; ++k) EXPECT_EQ(got[r][k], sent[1 - r][k]) << "rank " << r << " transfer " << k;
  }
}

// Self transfers pair up in order; a batch whose self sends and receives disagree is refused with a
// sentence naming the operation, and blames no peer.
TEST(HostExecutor, SelfTransfersPairOrAreRefused) {
  Pair pair;
  char a[16] = "fifteen bytes!!", b[16] = {};
  ExecTransfer pairOk[2] = {{true, 0, a, sizeof(a), nullptr, nullptr, 0},
                            {false, 0, b, sizeof(b), nullptr, nullptr, 0}};
  ExecOp op;
  op.name = "send/recv group";
  ASSERT_TRUE(isOk(pair.exec[0]->runP2p(pairOk, 2, op)));
  EXPECT_STREQ(b, a);

  ExecTransfer unpaired[1] = {{true, 0, a, sizeof(a), nullptr, nullptr, 0}};
  ExecFailure failure;
  op.failure = &failure;
  EXPECT_EQ(pair.exec[0]->runP2p(unpaired, 1, op), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("send/recv group on rank 0: 1 sends to self but 0 receives"), std::string::npos)
      << threadLastError();
  EXPECT_EQ(failure.culprit, -1);
}

}  // namespace
}  // namespace collcomm::detail
