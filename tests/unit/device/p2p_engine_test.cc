// The portable point-to-point engine (collectives/p2p.h): round by round on one thread, where
// what each round may move is known exactly, and through the host executor's runP2p (the
// executor interface, as core drives it) with two ranks as threads joined by FIFOs in this
// process's memory, parking forced or not. No communicator, bootstrap or transport takes part.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "collectives/p2p.h"
#include "common/futex.h"
#include "common/status.h"
#include "device/executor.h"
#include "device/host/host_platform.h"
#include "support/fifo_block.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

using test::FifoBlock;

// Steps of 1000 payload bytes in 1024-byte slots: transfers end mid-step, and a FIFO holds
// kNumSteps * 1000 bytes.
constexpr FifoLayout kLayout{1024, 64};
constexpr size_t kStep = 1000;
constexpr size_t kFifoBytes = kNumSteps * kStep;

// Two ranks of one process; `toOne` carries rank 0 -> 1, `toZero` 1 -> 0. The peers' doorbells are
// wired as the transports wire them (the receiver parks on dataBell, the sender on spaceBell).
struct Pair {
  FifoBlock toOne{kLayout}, toZero{kLayout};
  SendConn send[2];
  RecvConn recv[2];
  int ring[2] = {0, 1};
  std::atomic<uint32_t> abortFlag{0};
  const char* hosts[2] = {"here", "here"};
  std::unique_ptr<Executor> exec[2];

  // spinCount 0 and parkAfterNs 1: every wait that finds nothing parks at once.
  explicit Pair(bool forceParking = false) {
    for (int r = 0; r < 2; ++r) {
      FifoBlock& out = r == 0 ? toOne : toZero;
      FifoBlock& in = r == 0 ? toZero : toOne;
      bindFifo(send[r], out.mem, kLayout);
      bindFifo(recv[r], in.mem, kLayout);
      send[r].simpleStepMax = kStep;
      recv[r].simpleStepMax = kStep;
      send[r].peer = PeerRef{1 - r, -1, true, false, "here", &send[r].ctrl->receiverState, &send[r].ctrl->senderState};
      send[r].peer.waitBell = &send[r].ctrl->spaceBell;
      send[r].peer.wakeBell = &send[r].ctrl->dataBell;
      recv[r].peer = PeerRef{1 - r, -1, true, false, "here", &recv[r].ctrl->senderState, &recv[r].ctrl->receiverState};
      recv[r].peer.waitBell = &recv[r].ctrl->dataBell;
      recv[r].peer.wakeBell = &recv[r].ctrl->spaceBell;
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
      if (forceParking) {
        setup.spinCount = 0;
        setup.parkAfterNs = 1;
      }
      EXPECT_TRUE(isOk(makeHostExecutor(setup, &exec[r])));
    }
  }

  ExecTransfer sendTo(int r, const std::vector<char>& buf) {
    return ExecTransfer{true, 1 - r, const_cast<char*>(buf.data()), buf.size(), &send[r], nullptr, 0};
  }
  ExecTransfer recvFrom(int r, std::vector<char>& buf) {
    return ExecTransfer{false, 1 - r, buf.data(), buf.size(), nullptr, &recv[r], 0};
  }

  // Runs batch[r] on rank r's executor, the two ranks on two threads; their statuses.
  std::vector<Status> runBoth(std::vector<ExecTransfer> (&batch)[2]) {
    test::Watchdog dog(60, "two host executors running point-to-point batches");
    std::vector<Status> s(2, kOk);
    auto one = [&](int r) {
      ExecOp op;
      op.name = "send/recv group";
      return exec[r]->runP2p(batch[r].data(), batch[r].size(), op);
    };
    std::thread other([&] { s[1] = one(1); });
    s[0] = one(0);
    other.join();
    return s;
  }
};

std::vector<char> pattern(size_t bytes, int seed) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>((i * 131 + seed * 17 + (i >> 9)) & 0xff);
  return v;
}

HostWaitContext contextFor(int rank) {
  HostWaitContext ctx;
  ctx.timeoutSeconds = 30;
  ctx.opName = "send/recv group";
  ctx.rank = rank;
  ctx.nranks = 2;
  return ctx;
}

// Round by round on one thread: a round moves what can move now and never waits, so two engines
// take turns. Rank 0 sends three FIFOs' worth; its first round fills the FIFO and stops (no room),
// the receiver's round drains it, and so on until both are done with every byte in place.
TEST(P2pEngine, RoundsMoveWhatCanMoveAndResume) {
  Pair pair;
  const std::vector<char> out = pattern(3 * kFifoBytes + 123, 1);
  std::vector<char> in(out.size(), 0);
  ExecTransfer sendOp = pair.sendTo(0, out), recvOp = pair.recvFrom(1, in);
  const HostWaitContext ctx0 = contextFor(0), ctx1 = contextFor(1);
  HostPlatform plat0(ctx0), plat1(ctx1);
  P2pEngine<HostPlatform> sender(plat0, &sendOp, 1, kP2pCallTag), receiver(plat1, &recvOp, 1, kP2pCallTag);

  auto nothing = receiver.advance();  // nothing sent yet
  EXPECT_FALSE(nothing.moved);
  EXPECT_EQ(nothing.waitingOn, &recvOp);
  EXPECT_EQ(nothing.waiting, 1);

  int rounds = 0;
  for (; sendOp.done < sendOp.bytes || recvOp.done < recvOp.bytes; ++rounds) {
    ASSERT_LT(rounds, 100);
    const size_t before = sendOp.done;
    const auto s = sender.advance();
    EXPECT_EQ(sendOp.done - before, std::min(kFifoBytes, sendOp.bytes - before)) << "round " << rounds;
    EXPECT_EQ(s.waitingOn == nullptr, sendOp.done == sendOp.bytes);
    const auto r = receiver.advance();
    EXPECT_TRUE(r.moved);
    EXPECT_EQ(recvOp.done, sendOp.done);
    EXPECT_FALSE(sender.failed() || receiver.failed());
  }
  EXPECT_EQ(rounds, 4);
  EXPECT_EQ(in, out);
  EXPECT_EQ(pair.send[0].simpleStep, (out.size() + kStep - 1) / kStep);
  EXPECT_EQ(pair.recv[1].simpleStep, pair.send[0].simpleStep);
}

// Only the first unfinished transfer per (peer, direction) is active: while the first send to a
// peer is unfinished the second neither moves nor counts as waiting; the receiver's two receives
// take exactly their own bytes.
TEST(P2pEngine, OneTransferPerPeerAndDirectionAtATime) {
  Pair pair;
  const std::vector<char> a = pattern(kFifoBytes + 1, 2), b = pattern(kStep / 2, 3);
  std::vector<char> gotA(a.size()), gotB(b.size());
  ExecTransfer sends[2] = {pair.sendTo(0, a), pair.sendTo(0, b)};
  ExecTransfer recvs[2] = {pair.recvFrom(1, gotA), pair.recvFrom(1, gotB)};
  const HostWaitContext ctx0 = contextFor(0), ctx1 = contextFor(1);
  HostPlatform plat0(ctx0), plat1(ctx1);
  P2pEngine<HostPlatform> sender(plat0, sends, 2, kP2pCallTag), receiver(plat1, recvs, 2, kP2pCallTag);
  auto s = sender.advance();  // a fills the FIFO; b waits its turn
  EXPECT_EQ(sends[0].done, kFifoBytes);
  EXPECT_EQ(sends[1].done, 0u);
  EXPECT_EQ(s.waitingOn, &sends[0]);
  EXPECT_EQ(s.waiting, 1);
  auto r = receiver.advance();
  EXPECT_EQ(recvs[0].done, kFifoBytes);
  EXPECT_EQ(recvs[1].done, 0u);
  EXPECT_EQ(r.waiting, 1);
  s = sender.advance();  // a's last byte, then b in the same round
  EXPECT_EQ(s.waitingOn, nullptr);
  r = receiver.advance();
  EXPECT_EQ(r.waitingOn, nullptr);
  EXPECT_EQ(gotA, a);
  EXPECT_EQ(gotB, b);
}

// Through the executor interface: two transfers to the same peer each way, every one larger than a
// FIFO (a batch that blocked on one send would deadlock), the ranks posting their batches in
// different orders (rank 0 sends first, rank 1 receives first, and interleaves); exact bytes.
void runTwoEachWay(bool forceParking) {
  Pair pair(forceParking);
  const size_t sizes[2] = {5 * kFifoBytes + 7, 2 * kFifoBytes + kStep};
  std::vector<char> out[2][2], in[2][2];
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 2; ++k) {
      out[r][k] = pattern(sizes[k], 10 * r + k);
      in[r][k].assign(sizes[k], 0);
    }
  std::vector<ExecTransfer> batch[2];
  batch[0] = {pair.sendTo(0, out[0][0]), pair.sendTo(0, out[0][1]), pair.recvFrom(0, in[0][0]),
              pair.recvFrom(0, in[0][1])};
  batch[1] = {pair.recvFrom(1, in[1][0]), pair.sendTo(1, out[1][0]), pair.recvFrom(1, in[1][1]),
              pair.sendTo(1, out[1][1])};
  const auto s = pair.runBoth(batch);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(isOk(s[r])) << threadLastError();
    for (int k = 0; k < 2; ++k) EXPECT_EQ(in[r][k], out[1 - r][k]) << "rank " << r << " transfer " << k;
  }
}

TEST(P2pEngine, TwoTransfersEachWayPostedInDifferentOrders) { runTwoEachWay(false); }
TEST(P2pEngine, TwoTransfersEachWayWithEveryWaitParking) { runTwoEachWay(true); }

// A receive posted for fewer bytes than the matching send: the receiver fails with a sentence
// naming the sender and both sizes, instead of taking part of the step.
TEST(P2pEngine, SizeMismatchIsInvalidUsageNamingThePeer) {
  Pair pair;
  const std::vector<char> out = pattern(kStep + 10, 4);
  std::vector<char> in(kStep - 1, 0);
  std::vector<ExecTransfer> batch[2];
  batch[0] = {pair.sendTo(0, out)};  // fits in the FIFO: the sender finishes on its own
  batch[1] = {pair.recvFrom(1, in)};
  const auto s = pair.runBoth(batch);
  EXPECT_TRUE(isOk(s[0]));
  ASSERT_EQ(s[1], Status::kInvalidUsage);
  // threadLastError is per thread: rank 1 ran on the other thread, so check the sentence there.
  std::string message;
  std::thread([&] {
    ExecTransfer again = pair.recvFrom(1, in);
    ExecOp op;
    op.name = "send/recv group";
    // The mismatched step is still at the head of the FIFO: the same refusal again.
    EXPECT_EQ(pair.exec[1]->runP2p(&again, 1, op), Status::kInvalidUsage);
    message = threadLastError();
  }).join();
  EXPECT_NE(message.find("rank 0 (host here) sent a step of 1000 bytes where 999 were expected"), std::string::npos)
      << message;
}

// Sends to self pair with receives from self in order, and may overlap their receive buffer either
// way (copied as memmove copies).
TEST(P2pEngine, SelfTransfersCopyInOrderAndMayOverlap) {
  Pair pair;
  std::vector<char> a = pattern(5000, 5), b(5000, 0), c = pattern(3000, 6), d(3000, 0);
  ExecTransfer batch[4] = {{true, 0, a.data(), a.size(), nullptr, nullptr, 0},
                           {true, 0, c.data(), c.size(), nullptr, nullptr, 0},
                           {false, 0, b.data(), b.size(), nullptr, nullptr, 0},
                           {false, 0, d.data(), d.size(), nullptr, nullptr, 0}};
  ExecOp op;
  op.name = "send/recv group";
  ASSERT_TRUE(isOk(pair.exec[0]->runP2p(batch, 4, op))) << threadLastError();
  EXPECT_EQ(b, a);
  EXPECT_EQ(d, c);

  for (const ptrdiff_t shift : {ptrdiff_t{3}, ptrdiff_t{-3}, ptrdiff_t{700}, ptrdiff_t{-4999}}) {
    SCOPED_TRACE(shift);
    const std::vector<char> orig = pattern(12000, 7);
    std::vector<char> buf = orig;
    const size_t n = 5000, from = 6000;
    ExecTransfer overlap[2] = {{true, 0, buf.data() + from, n, nullptr, nullptr, 0},
                               {false, 0, buf.data() + from + shift, n, nullptr, nullptr, 0}};
    ASSERT_TRUE(isOk(pair.exec[0]->runP2p(overlap, 2, op))) << threadLastError();
    std::vector<char> want = orig;
    memmove(want.data() + from + shift, orig.data() + from, n);
    EXPECT_EQ(buf, want);
  }

  ExecTransfer sizes[2] = {{true, 0, a.data(), 10, nullptr, nullptr, 0}, {false, 0, b.data(), 11, nullptr, nullptr, 0}};
  EXPECT_EQ(pair.exec[0]->runP2p(sizes, 2, op), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("a send to self of 10 bytes is paired with a receive from self of 11 bytes"),
            std::string::npos)
      << threadLastError();
}

// A peer that leaves (its state word turns gone, as core marks it on failure or abort) fails the
// waiting rank with a sentence naming it, instead of waiting for the deadline.
TEST(P2pEngine, APeerThatLeavesFailsTheWaitingRank) {
  for (const bool parking : {false, true}) {
    SCOPED_TRACE(parking);
    Pair pair(parking);
    std::vector<char> in(kStep, 0);
    test::Watchdog dog(60, "a receive whose peer leaves");
    std::thread leaver([&] {
      __atomic_store_n(&pair.send[1].ctrl->senderState, goneState(1, kGoneAborted), __ATOMIC_RELEASE);
      wakeParked(&pair.send[1].ctrl->dataBell);
    });
    ExecTransfer t = pair.recvFrom(0, in);
    ExecOp op;
    op.name = "Recv";
    ExecFailure failure;
    op.failure = &failure;
    const Status s = pair.exec[0]->runP2p(&t, 1, op);
    leaver.join();
    EXPECT_EQ(s, Status::kRemoteError);
    EXPECT_EQ(failure.culprit, 1);
    EXPECT_NE(threadLastError().find("rank 1 (host here) was aborted"), std::string::npos) << threadLastError();
  }
}

// A platform whose block is several host threads, as a GPU runs the engine (CudaPlatform): each
// thread holds private copies of the transfers and connections, the threads split every copy
// (reduceCopy's tid/nthreads) and must take the same decisions (allAgree), and thread 0 alone
// publishes after a barrier. Waits spin (yielding) under a deadline instead of failing a test by
// hanging.
struct Team {
  explicit Team(int n) : nthreads(n), bar(n), votes(n) {}
  int nthreads;
  std::barrier<> bar;
  std::vector<int> votes;
  std::atomic<bool> failed{false};
};

// The FIFO words' loads and stores of the test platforms below, as the host executor's.
struct HostWords {
  static uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  static uint64_t loadRelaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
  static void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
  static void storeRelaxed(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
};

class TeamPlatform : public HostWords {
 public:
  TeamPlatform(Team& team, int tid) : team_(team), tid_(tid) {}
  int tid() const { return tid_; }
  int nthreads() const { return team_.nthreads; }
  void barrier() { team_.bar.arrive_and_wait(); }
  bool allAgree(bool v) {
    team_.votes[tid_] = v ? 1 : 0;
    barrier();
    bool all = true;
    for (int vote : team_.votes) all = all && vote != 0;
    barrier();  // every thread has read the votes before any writes the next
    return all;
  }
  template <class Pred>
  bool waitUntil(Pred&& pred, const PeerRef&, const char*) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!pred())
      if (std::chrono::steady_clock::now() > until) return fail();
    return true;
  }
  bool idle(uint32_t* iteration, const PeerRef&, const char*, bool (*)(void*) = nullptr, void* = nullptr) {
    if ((*iteration)++ == 0) idleSince_ = std::chrono::steady_clock::now();
    sched_yield();
    return std::chrono::steady_clock::now() - idleSince_ < std::chrono::seconds(20) || fail();
  }
  static bool checksHealth(uint32_t) { return true; }  // idle checks its deadline every round
  void failStepMismatch(const PeerRef&, uint64_t, uint64_t) { fail(); }

 private:
  bool fail() {
    team_.failed = true;
    return false;
  }
  Team& team_;
  int tid_;
  std::chrono::steady_clock::time_point idleSince_;
};

// Runs `batch` on a team of n threads, each on private copies as the CUDA kernel makes them (one
// copy per connection), then writes the step counters back. True unless a wait failed.
bool runOnTeam(int n, std::vector<ExecTransfer>& batch, int self) {
  Team team(n);
  std::vector<std::thread> threads;
  std::vector<std::vector<ExecTransfer>> ops(n, batch);
  std::vector<SendConn> sends[16];
  std::vector<RecvConn> recvs[16];
  for (int t = 0; t < n; ++t) {
    sends[t].resize(batch.size());
    recvs[t].resize(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (batch[i].peer == self || batch[i].bytes == 0) continue;
      if (batch[i].isSend) {
        sends[t][i] = *batch[i].send;
        ops[t][i].send = &sends[t][i];
      } else {
        recvs[t][i] = *batch[i].recv;
        ops[t][i].recv = &recvs[t][i];
      }
    }
  }
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      TeamPlatform plat(team, t);
      P2pEngine<TeamPlatform> engine(plat, ops[t].data(), ops[t].size(), kP2pCallTag);
      engine.copySelf(self);
      engine.run();
    });
  for (std::thread& th : threads) th.join();
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].done = ops[0][i].done;
    if (batch[i].peer == self || batch[i].bytes == 0) continue;
    if (batch[i].isSend)
      batch[i].send->simpleStep = sends[0][i].simpleStep;
    else
      batch[i].recv->simpleStep = recvs[0][i].simpleStep;
  }
  return !team.failed;
}

// The engine on blocks of several threads (3 on rank 0, 2 on rank 1: different splits of every
// step), one transfer each way per connection (the test copies one connection per transfer),
// sizes that end mid-step and outgrow the FIFO, and a self pair that overlaps: exact bytes, and
// the step counters where a single-threaded run leaves them, so a second batch continues the FIFO.
TEST(P2pEngine, RunsOnBlocksOfSeveralThreadsWithTheSameResult) {
  Pair pair;
  test::Watchdog dog(60, "point-to-point engine on teams of threads");
  const size_t bytes = 3 * kFifoBytes + 333;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    std::vector<char> out[2], in[2];
    for (int r = 0; r < 2; ++r) {
      out[r] = pattern(bytes + round, 20 * r + round);
      in[r].assign(bytes + round, 0);
    }
    std::vector<char> self = pattern(9000, 30 + round);
    const std::vector<char> selfOrig = self;
    std::vector<ExecTransfer> batch[2];
    batch[0] = {pair.sendTo(0, out[0]), pair.recvFrom(0, in[0]),
                ExecTransfer{true, 0, self.data() + 1000, 5000, nullptr, nullptr, 0},
                ExecTransfer{false, 0, self.data() + 2500, 5000, nullptr, nullptr, 0}};
    batch[1] = {pair.recvFrom(1, in[1]), pair.sendTo(1, out[1])};
    bool ok[2] = {false, false};
    std::thread other([&] { ok[1] = runOnTeam(2, batch[1], 1); });
    ok[0] = runOnTeam(3, batch[0], 0);
    other.join();
    ASSERT_TRUE(ok[0] && ok[1]);
    EXPECT_EQ(in[0], out[1]);
    EXPECT_EQ(in[1], out[0]);
    std::vector<char> want = selfOrig;
    memmove(want.data() + 2500, selfOrig.data() + 1000, 5000);
    EXPECT_EQ(self, want);
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(pair.send[r].simpleStep, pair.recv[1 - r].simpleStep);
      for (const ExecTransfer& t : batch[r]) EXPECT_EQ(t.done, t.bytes);
    }
  }
  EXPECT_EQ(pair.send[0].simpleStep, (bytes + kStep - 1) / kStep + (bytes + 1 + kStep - 1) / kStep);
}

// One thread that records which peer each health check of an idle round names (the platform's
// slow path: where a departure or the deadline is found) and gives up after a dozen.
class WatchPlatform : public HostWords {
 public:
  int tid() const { return 0; }
  int nthreads() const { return 1; }
  void barrier() {}
  bool allAgree(bool v) { return v; }
  template <class Pred>
  bool waitUntil(Pred&& pred, const PeerRef&, const char*) {
    return pred();
  }
  bool idle(uint32_t* iteration, const PeerRef& peer, const char*, bool (*)(void*) = nullptr, void* = nullptr) {
    if (!checksHealth((*iteration)++)) return true;
    named.push_back(peer.rank);
    return named.size() < 12;
  }
  static bool checksHealth(uint32_t rounds) { return rounds % 5 == 4; }
  void failStepMismatch(const PeerRef&, uint64_t, uint64_t) {}
  std::vector<int> named;
};

// A batch waiting on three peers, none of which sends: its health checks name each peer in turn,
// so a departure of any of them is found as soon as the first one's would be (they named only the
// first, and the others' exits were found at the deadline).
TEST(P2pEngine, IdleHealthChecksNameEveryAwaitedPeerInTurn) {
  FifoBlock fifos[3] = {FifoBlock{kLayout}, FifoBlock{kLayout}, FifoBlock{kLayout}};
  RecvConn recv[3];
  std::vector<char> in[3];
  std::vector<ExecTransfer> batch;
  for (int p = 0; p < 3; ++p) {
    bindFifo(recv[p], fifos[p].mem, kLayout);
    recv[p].simpleStepMax = kStep;
    recv[p].peer = PeerRef{p + 1, -1, true, false, "here", &recv[p].ctrl->senderState, &recv[p].ctrl->receiverState};
    in[p].assign(5000, 0);
    batch.push_back(ExecTransfer{false, p + 1, in[p].data(), in[p].size(), nullptr, &recv[p], 0});
  }
  WatchPlatform plat;
  P2pEngine<WatchPlatform> engine(plat, batch.data(), batch.size(), kP2pCallTag);
  EXPECT_FALSE(engine.run());
  EXPECT_EQ(plat.named, (std::vector<int>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
}

}  // namespace
}  // namespace collcomm::detail
