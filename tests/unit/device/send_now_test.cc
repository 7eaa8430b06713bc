// A Simple step published to a proxied (NET) connection is handed to the network at once, from
// the planner's step size up (HostWaitContext::sendNow, protocols.h postSend); other connections
// and smaller steps leave it to the next wait.
#include <gtest/gtest.h>

#include <memory>

#include "device/fifo.h"
#include "device/host/host_platform.h"
#include "device/protocols.h"

namespace collcomm::detail {
namespace {

int gSendCalls = 0;
bool countSend() {
  ++gSendCalls;
  return true;
}

struct Publisher {
  std::unique_ptr<FifoCtrl> ctrl = std::make_unique<FifoCtrl>();
  SendConn conn;
  HostWaitContext ctx;

  explicit Publisher(bool proxied) {
    conn.ctrl = ctrl.get();
    conn.peer.proxied = proxied;
    ctx.sendNow = countSend;
    ctx.sendNowMinBytes = 16 << 10;
  }
  // Publishes one step of `bytes`; returns how many hand-offs it made.
  int publish(size_t bytes) {
    gSendCalls = 0;
    HostPlatform plat(ctx);
    const uint64_t step = conn.simpleStep;
    ProtoSimple::postSend(plat, conn, nullptr, bytes, kP2pCallTag);
    EXPECT_EQ(ctrl->simpleTail, step + 1);  // published either way
    EXPECT_EQ(ctrl->simpleBytes[step % kNumSteps], stepWord(bytes, kP2pCallTag));
    return gSendCalls;
  }
};

TEST(SendNow, ProxiedStepsFromTheThresholdUpLeaveAtOnce) {
  Publisher p(/*proxied=*/true);
  EXPECT_EQ(p.publish(16 << 10), 1);
  EXPECT_EQ(p.publish(128 << 10), 1);
  EXPECT_EQ(p.publish((16 << 10) - 64), 0);
  EXPECT_EQ(p.publish(0), 0);
}

TEST(SendNow, OtherConnectionsAndUnsetHookNeverCall) {
  Publisher shm(/*proxied=*/false);
  EXPECT_EQ(shm.publish(128 << 10), 0);
  Publisher net(/*proxied=*/true);
  net.ctx.sendNow = nullptr;
  EXPECT_EQ(net.publish(128 << 10), 0);
}

}  // namespace
}  // namespace collcomm::detail
