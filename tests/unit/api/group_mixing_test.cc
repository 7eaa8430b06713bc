// A user's point-to-point transfers and a collective in one group, issued in different orders on
// different ranks, must not be matched with each other: the one-shot AllReduce talks to every peer
// over its own connections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

TEST(GroupMixing, SendRecvAndOneShotAllReduceInDifferentOrders) {
  Watchdog dog(60, "group mixing");
  setenv("COLLCOMM_TIMEOUT", "20", 1);
  ThreadRanks ranks(3);
  unsetenv("COLLCOMM_TIMEOUT");
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ranks.run([&](int rank, ccComm_t comm) {
    // Same element count for the message and the allreduce, so a mix-up would not be caught as a
    // size mismatch but would give wrong numbers.
    const size_t n = 16;
    std::vector<float> in(n, static_cast<float>(rank + 1)), out(n, -1.0f), msg(n, -1.0f);
    std::vector<float> payload(n, 100.0f);
    // Connections are made on first use, in step with the peer: make them in matching order first
    // (a lazily connected ccSend waits for its peer to connect too).
    ccGroupStart();
    if (rank == 0) ccSend(payload.data(), n, ccFloat32, 1, comm, nullptr);
    if (rank == 1) ccRecv(msg.data(), n, ccFloat32, 0, comm, nullptr);
    ccGroupEnd();
    ccAllReduce(in.data(), out.data(), n, ccFloat32, ccSum, comm, nullptr);
    std::fill(out.begin(), out.end(), -1.0f);
    std::fill(msg.begin(), msg.end(), -1.0f);
    payload.assign(n, 200.0f);
    ccGroupStart();
    if (rank == 0) {
      ccSend(payload.data(), n, ccFloat32, 1, comm, nullptr);
      ccAllReduce(in.data(), out.data(), n, ccFloat32, ccSum, comm, nullptr);
    } else if (rank == 1) {
      ccAllReduce(in.data(), out.data(), n, ccFloat32, ccSum, comm, nullptr);
      ccRecv(msg.data(), n, ccFloat32, 0, comm, nullptr);
    } else {
      ccAllReduce(in.data(), out.data(), n, ccFloat32, ccSum, comm, nullptr);
    }
    if (ccGroupEnd() != ccSuccess) {
      ranks.fail("group failed: " + std::string(ccGetLastError(comm)));
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      if (out[i] != 6.0f) {
        ranks.fail("rank " + std::to_string(rank) + ": allreduce gave " + std::to_string(out[i]));
        return;
      }
      if (rank == 1 && msg[i] != 200.0f) {
        ranks.fail("rank 1 received " + std::to_string(msg[i]) + " instead of the message");
        return;
      }
    }
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

}  // namespace
}  // namespace collcomm::test
