// N ranks as threads of this process, every pair joined both ways by FIFOs laid out in this
// process's memory and wired as the transports wire them (the per-peer collective connections
// that core makes for the one-shot and Direct algorithms), each rank with its host executor. No
// communicator, bootstrap or transport takes part. For the tests of the portable algorithms that
// talk to every peer (one_shot_test.cc, direct_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "device/executor.h"
#include "device/host/host_platform.h"
#include "support/fifo_block.h"
#include "support/watchdog.h"

namespace collcomm::test {

using namespace collcomm::detail;

class PeerMesh {
 public:
  // Steps of 1001 payload bytes in 1024-byte slots: elements of every size straddle steps, and a
  // FIFO holds kNumSteps * 1001 bytes.
  static constexpr FifoLayout kLayout{1024, 64};
  static constexpr size_t kStep = 1001;

  // crossProcess: the executors are told every peer is another process (this one: its pid), so
  // Direct reads and writes them with cross-memory attach rather than through plain pointers.
  explicit PeerMesh(int n, bool crossProcess = false)
      : n_(n),
        send_(n * n),
        recv_(n * n),
        peers_(n, std::vector<ExecPeerConn>(n, ExecPeerConn{nullptr, nullptr})),
        hosts_(n, "here"),
        ring_(n),
        exec_(n) {
    for (int r = 0; r < n; ++r) ring_[r] = r;
    for (int i = 0; i < n * n; ++i) fifo_.push_back(std::make_unique<FifoBlock>(kLayout));
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p) {
        if (p == r) continue;
        char* out = fifo_[r * n + p]->mem;  // r -> p
        char* in = fifo_[p * n + r]->mem;   // p -> r
        SendConn& s = send_[r * n + p];
        RecvConn& v = recv_[r * n + p];
        bindFifo(s, out, kLayout);
        bindFifo(v, in, kLayout);
        s.simpleStepMax = kStep;
        v.simpleStepMax = kStep;
        s.peer = PeerRef{p, -1, true, false, "here", &s.ctrl->receiverState, &s.ctrl->senderState};
        s.peer.waitBell = &s.ctrl->spaceBell;
        s.peer.wakeBell = &s.ctrl->dataBell;
        v.peer = PeerRef{p, -1, true, false, "here", &v.ctrl->senderState, &v.ctrl->receiverState};
        v.peer.waitBell = &v.ctrl->dataBell;
        v.peer.wakeBell = &v.ctrl->spaceBell;
        peers_[r][p] = ExecPeerConn{&s, &v};
      }
    for (int r = 0; r < n; ++r) {
      ExecSetup setup{};
      setup.device = CC_DEVICE_HOST;
      setup.rank = r;
      setup.nranks = n;
      setup.mostRanksOnADevice = 1;
      setup.timeoutSeconds = 30;
      // One ring channel over the mesh's connections (the executor needs one; these tests use
      // the per-peer ones).
      if (n > 1)
        setup.channels = {ExecChannel{&send_[r * n + (r + 1) % n], &recv_[r * n + (r + n - 1) % n], ring_.data(), r}};
      setup.abortFlag = &abortFlag;
      setup.hostNames = hosts_.data();
      for (int p = 0; p < n; ++p) setup.peers.push_back(ExecPeer{static_cast<int>(getpid()), p == r || !crossProcess});
      EXPECT_TRUE(isOk(makeHostExecutor(setup, &exec_[r])));
    }
  }

  int size() const { return n_; }
  const ExecPeerConn* peers(int rank) const { return peers_[rank].data(); }
  Executor& exec(int rank) { return *exec_[rank]; }

  // What an operation of `rank` waits under, for tests that run the portable algorithms with
  // their own HostPlatform.
  HostWaitContext waitContext(int rank, const char* opName) const {
    HostWaitContext ctx;
    ctx.abortFlag = &abortFlag;
    ctx.timeoutSeconds = 30;
    ctx.opName = opName;
    ctx.rank = rank;
    ctx.nranks = n_;
    ctx.hostNames = hosts_.data();
    return ctx;
  }

  // Runs fn(rank) on n threads (rank 0 on this one) and returns their statuses.
  template <class Fn>
  std::vector<Status> onAll(Fn fn, const char* what = "ranks of a peer mesh") {
    Watchdog dog(120, what);
    std::vector<Status> s(n_, kOk);
    std::vector<std::thread> others;
    for (int r = 1; r < n_; ++r) others.emplace_back([&, r] { s[r] = fn(r); });
    s[0] = fn(0);
    for (std::thread& t : others) t.join();
    return s;
  }

  std::atomic<uint32_t> abortFlag{0};

 private:
  int n_;
  std::vector<std::unique_ptr<FifoBlock>> fifo_;  // [from * n + to]
  std::vector<SendConn> send_;                    // [rank * n + peer]: rank -> peer
  std::vector<RecvConn> recv_;                    // [rank * n + peer]: rank <- peer
  std::vector<std::vector<ExecPeerConn>> peers_;
  std::vector<const char*> hosts_;
  std::vector<int> ring_;
  std::vector<std::unique_ptr<Executor>> exec_;
};

}  // namespace collcomm::test
