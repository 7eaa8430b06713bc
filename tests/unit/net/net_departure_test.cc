// The NET transport when a receiving rank leaves: its sender's error names the rank that left and
// why, or the root cause it left for (as the SHM and P2P transports do), not "exited" for a rank
// that was aborted nor the rank that merely passed a third rank's failure on. Ranks are threads of
// this process connected over NET (COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "collcomm.h"
#include "support/net_only.h"
#include "support/op_signal.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

class NetDeparture : public NetOnlyTest {};

std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// "rank R (host H": the library's way of naming a rank.
std::string named(int rank) { return "rank " + std::to_string(rank) + " (host " + hostName(); }

constexpr size_t kWarm = 1000;
constexpr size_t kBig = size_t{16} << 20;  // floats: far more than the connection and the sockets hold

// Rank 0 sends a large message to rank 1, which aborts its communicator instead of receiving:
// rank 0's error says rank 1 was aborted (it did not exit) and left.
TEST_F(NetDeparture, ReceiverThatAbortsIsNamedWithItsReason) {
  Watchdog dog(120, "NetDeparture.ReceiverThatAbortsIsNamedWithItsReason");
  ThreadRanks tr(2);
  ASSERT_EQ(tr.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::string error;
  ccResult_t result = ccSuccess;
  OpEntry sending(tr.comm(0));
  tr.run([&](int rank, ccComm_t comm) {
    std::vector<float> buf(kBig, 1.0f);
    // Connects 0 -> 1 first: the departure must come through an established connection.
    ccResult_t r = rank == 0 ? ccSend(buf.data(), kWarm, ccFloat32, 1, comm, nullptr)
                             : ccRecv(buf.data(), kWarm, ccFloat32, 0, comm, nullptr);
    if (r != ccSuccess) tr.fail("rank " + std::to_string(rank) + " warm-up: " + ccGetLastError(comm));
    if (rank == 0) {
      sending.announce();
      result = ccSend(buf.data(), kBig, ccFloat32, 1, comm, nullptr);
      error = ccGetLastError(comm);
    } else {
      // Leaves once rank 0 is inside the send (it cannot finish without this rank).
      if (!sending.waitInside()) tr.fail("rank 0's send did not start");
      ccCommAbort(comm);
    }
  });
  tr.forget(1);
  ASSERT_TRUE(tr.ok()) << tr.failures();
  EXPECT_EQ(result, ccRemoteError) << error;
  EXPECT_NE(error.find(named(1)), std::string::npos) << error;
  EXPECT_NE(error.find("was aborted and left the operation"), std::string::npos) << error;
  ccCommAbort(tr.comm(0));
  tr.forget(0);
}

// Rank 1 waits for rank 2, which aborts; rank 1's receive fails and it leaves every connection,
// among them the one rank 0 is sending a large message on. Rank 0's error names the root cause,
// rank 2, and rank 1 as the one that left because of it (before: "rank 1 exited").
TEST_F(NetDeparture, ReceiverThatLeftBecauseOfAThirdRankNamesTheRootCause) {
  Watchdog dog(120, "NetDeparture.ReceiverThatLeftBecauseOfAThirdRankNamesTheRootCause");
  ThreadRanks tr(3);
  ASSERT_EQ(tr.initResult(), ccSuccess) << ccGetLastError(nullptr);
  std::string error0, error1;
  ccResult_t result0 = ccSuccess, result1 = ccSuccess;
  OpEntry sending(tr.comm(0)), receiving(tr.comm(1));
  tr.run([&](int rank, ccComm_t comm) {
    std::vector<float> buf(kBig, 1.0f);
    auto warm = [&](ccResult_t r) {
      if (r != ccSuccess) tr.fail("rank " + std::to_string(rank) + " warm-up: " + ccGetLastError(comm));
    };
    // Connections 0 -> 1 and 2 -> 1.
    if (rank == 1) {
      ccGroupStart();
      ccRecv(buf.data(), kWarm, ccFloat32, 0, comm, nullptr);
      ccRecv(buf.data() + kWarm, kWarm, ccFloat32, 2, comm, nullptr);
      warm(ccGroupEnd());
    } else {
      warm(ccSend(buf.data(), kWarm, ccFloat32, 1, comm, nullptr));
    }
    if (rank == 0) {
      sending.announce();
      result0 = ccSend(buf.data(), kBig, ccFloat32, 1, comm, nullptr);
      error0 = ccGetLastError(comm);
    } else if (rank == 1) {
      receiving.announce();
      result1 = ccRecv(buf.data(), kWarm, ccFloat32, 2, comm, nullptr);
      error1 = ccGetLastError(comm);
    } else {
      // Aborts once rank 1 waits for it and rank 0 is inside its send to rank 1 (neither can
      // finish without this rank; the announcements tell these calls from the warm-up).
      if (!receiving.waitInside()) tr.fail("rank 1's receive did not start");
      if (!sending.waitInside()) tr.fail("rank 0's send did not start");
      ccCommAbort(comm);
    }
  });
  tr.forget(2);
  ASSERT_TRUE(tr.ok()) << tr.failures();
  EXPECT_EQ(result1, ccRemoteError) << error1;
  EXPECT_NE(error1.find(named(2)), std::string::npos) << error1;
  EXPECT_EQ(result0, ccRemoteError) << error0;
  EXPECT_NE(error0.find(named(2) + ") was aborted, and " + named(1) + ") left the operation because of it"),
            std::string::npos)
      << error0;
  for (int r = 0; r < 2; ++r) {
    ccCommAbort(tr.comm(r));
    tr.forget(r);
  }
}

}  // namespace
}  // namespace collcomm::test
