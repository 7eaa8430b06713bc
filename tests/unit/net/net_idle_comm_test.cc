// A NET communicator with no operation running has its receiving sockets read only now and then
// (net_transport.cc, NetConnection::idleRound), while another communicator of the process keeps
// the proxy busy. What its peer sent meanwhile must still arrive whole, and a peer that left it
// meanwhile must be named at its next operation. Ranks are threads of this process connected over
// NET (COLLCOMM_P2P_DISABLE=1 COLLCOMM_SHM_DISABLE=1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/net_only.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

class NetIdleComm : public NetOnlyTest {};

constexpr int kBusyOps = 300;  // operations on the busy communicator while the other one idles

// Runs kBusyOps allreduces of `count` int32 on `comm` and checks each sum (ranks 0 and 1 give
// i and 2i + rank). Returns an empty string or what went wrong.
std::string busyAllReduces(int rank, ccComm_t comm, size_t count) {
  std::vector<int32_t> buf(count);
  for (int i = 0; i < kBusyOps; ++i) {
    for (size_t k = 0; k < count; ++k) buf[k] = static_cast<int32_t>(rank == 0 ? i + k : 2 * (i + k) + 1);
    if (ccAllReduce(buf.data(), buf.data(), count, ccInt32, ccSum, comm, nullptr) != ccSuccess)
      return std::string("allreduce ") + std::to_string(i) + ": " + ccGetLastError(comm);
    for (size_t k = 0; k < count; ++k)
      if (buf[k] != static_cast<int32_t>(3 * (i + k) + 1))
        return "allreduce " + std::to_string(i) + " element " + std::to_string(k) + ": " + std::to_string(buf[k]);
  }
  return {};
}

// Rank 1 sends on `idle` (two messages, of 2 floats and of 32 KiB, after a warm-up pair that
// connects the two ranks) and goes on to the busy communicator; rank 0 runs every busy operation
// first, so the messages sit on its idle connection through all of them, and only then receives
// them: both arrive exact.
TEST_F(NetIdleComm, WhatArrivedWhileIdleIsDelivered) {
  Watchdog dog(120, "NetIdleComm.WhatArrivedWhileIdleIsDelivered");
  ThreadRanks busy(2), idle(2);
  ASSERT_EQ(busy.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ASSERT_EQ(idle.initResult(), ccSuccess) << ccGetLastError(nullptr);
  const std::vector<size_t> counts = {2, 8192};
  auto value = [](size_t k) { return static_cast<float>(k) * 0.5f + 3.0f; };
  busy.run([&](int rank, ccComm_t comm) {
    ccComm_t other = idle.comm(rank);
    const std::string who = "rank " + std::to_string(rank);
    float warm = 1.0f;
    if ((rank == 1 ? ccSend(&warm, 1, ccFloat32, 0, other, nullptr) : ccRecv(&warm, 1, ccFloat32, 1, other, nullptr)) !=
        ccSuccess)
      busy.fail(who + " warm-up: " + ccGetLastError(other));
    std::vector<std::vector<float>> bufs;
    for (size_t count : counts) bufs.emplace_back(count, -1.0f);
    if (rank == 1) {
      for (auto& buf : bufs) {
        for (size_t k = 0; k < buf.size(); ++k) buf[k] = value(k);
        if (ccSend(buf.data(), buf.size(), ccFloat32, 0, other, nullptr) != ccSuccess)
          busy.fail(who + " send: " + ccGetLastError(other));
      }
    }
    if (std::string e = busyAllReduces(rank, comm, 4); !e.empty()) busy.fail(who + " " + e);
    if (rank == 0) {
      for (auto& buf : bufs) {
        if (ccRecv(buf.data(), buf.size(), ccFloat32, 1, other, nullptr) != ccSuccess) {
          busy.fail(who + " receive: " + ccGetLastError(other));
          continue;
        }
        for (size_t k = 0; k < buf.size(); ++k)
          if (buf[k] != value(k)) {
            busy.fail("message of " + std::to_string(buf.size()) + " floats, element " + std::to_string(k) + ": " +
                      std::to_string(buf[k]));
            break;
          }
      }
    }
  });
  EXPECT_TRUE(busy.ok()) << busy.failures();
}

// Rank 1 aborts the idle communicator while both ranks keep the busy one going; rank 0's next
// operation on the idle one fails with ccRemoteError naming rank 1 well before the timeout.
TEST_F(NetIdleComm, PeerThatLeftWhileIdleIsNamedAtTheNextOperation) {
  Watchdog dog(120, "NetIdleComm.PeerThatLeftWhileIdleIsNamedAtTheNextOperation");
  ThreadRanks busy(2), idle(2);
  ASSERT_EQ(busy.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ASSERT_EQ(idle.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ccResult_t result = ccSuccess;
  std::string error;
  busy.run([&](int rank, ccComm_t comm) {
    ccComm_t other = idle.comm(rank);
    float warm[2] = {1.0f, 2.0f};
    if (ccAllReduce(warm, warm, 2, ccFloat32, ccSum, other, nullptr) != ccSuccess)
      busy.fail("rank " + std::to_string(rank) + " warm-up: " + ccGetLastError(other));
    // Rank 1's warm-up returns once its part is handed over, maybe before rank 0 has it; an abort
    // right then would fail rank 0's warm-up. One operation on the busy communicator first: rank
    // 0 joins it only after its warm-up ended.
    float sync = 1.0f;
    if (ccAllReduce(&sync, &sync, 1, ccFloat32, ccSum, comm, nullptr) != ccSuccess)
      busy.fail("rank " + std::to_string(rank) + " sync: " + ccGetLastError(comm));
    if (rank == 1) ccCommAbort(other);
    if (std::string e = busyAllReduces(rank, comm, 4); !e.empty()) busy.fail("rank " + std::to_string(rank) + " " + e);
    if (rank == 0) {
      float buf[2] = {1.0f, 2.0f};
      result = ccAllReduce(buf, buf, 2, ccFloat32, ccSum, other, nullptr);
      error = ccGetLastError(other);
    }
  });
  idle.forget(1);
  ASSERT_TRUE(busy.ok()) << busy.failures();
  EXPECT_EQ(result, ccRemoteError) << error;
  EXPECT_NE(error.find("rank 1 (host "), std::string::npos) << error;
  ccCommAbort(idle.comm(0));
  idle.forget(0);
}

}  // namespace
}  // namespace collcomm::test
