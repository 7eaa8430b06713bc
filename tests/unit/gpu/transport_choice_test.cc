// Which transport a connection takes (transport/connect.h pickTransport), from the two ranks'
// PeerInfo alone: host ranks by place (one process, one host, apart); GPU ranks likewise through
// the transports whose FIFOs the device reaches, in builds with CUDA, and through none elsewhere.
// Runs in every build: choosing needs no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "transport/connect.h"

namespace collcomm::detail {
namespace {

PeerInfo rankAt(int rank, int device, uint64_t process, uint64_t host) {
  PeerInfo p{};
  p.rank = rank;
  p.pid = 100 + static_cast<int>(process);
  p.device = device;
  p.processToken = process;
  p.hostHash = p.machineHash = host;
  p.deviceBusId = device >= 0 ? 0x100 * (device + 1) : -1;
  return p;
}

// The picked transport's name, or "none".
std::string picked(const PeerInfo& self, const PeerInfo& peer, const TransportOps** ops = nullptr) {
  uint32_t index = 0;
  const TransportOps* t = pickTransport(self, peer, &index);
  if (ops != nullptr) *ops = t;
  return t == nullptr ? "none" : t->name;
}

TEST(TransportChoice, HostRanksByPlace) {
  const PeerInfo me = rankAt(0, -1, 1, 1);
  EXPECT_EQ(picked(me, rankAt(1, -1, 1, 1)), "P2P");
  EXPECT_EQ(picked(me, rankAt(1, -1, 2, 1)), "SHM");
  const TransportOps* net = nullptr;
  EXPECT_EQ(picked(me, rankAt(1, -1, 3, 2), &net), "NET");
  ASSERT_NE(net, nullptr);
  EXPECT_FALSE(net->deviceFifo);
  EXPECT_TRUE(net->proxied);
}

TEST(TransportChoice, GpuRanksByPlace) {
  const PeerInfo me = rankAt(0, 0, 1, 1);
#if CC_HAVE_CUDA
  EXPECT_EQ(picked(me, rankAt(1, 0, 1, 1)), "CUDA_P2P");
  EXPECT_EQ(picked(me, rankAt(1, 1, 1, 1)), "CUDA_P2P");
  EXPECT_EQ(picked(me, rankAt(1, 1, 2, 1)), "CUDA_IPC");
  // Another host: NET, through FIFOs the device reaches, moved by the proxy.
  const TransportOps* net = nullptr;
  EXPECT_EQ(picked(me, rankAt(1, 0, 3, 2), &net), "NET");
  ASSERT_NE(net, nullptr);
  EXPECT_TRUE(net->deviceFifo);
  EXPECT_TRUE(net->proxied);
  // Never a host rank's transport, whatever the pair's place.
  for (const PeerInfo& peer : {rankAt(1, 0, 1, 1), rankAt(1, 1, 2, 1), rankAt(1, 0, 3, 2)}) {
    const TransportOps* t = nullptr;
    (void)picked(me, peer, &t);
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(t->deviceFifo) << t->name;
  }
#else
  EXPECT_EQ(picked(me, rankAt(1, 0, 1, 1)), "none");
  EXPECT_EQ(picked(me, rankAt(1, 0, 3, 2)), "none");
#endif
}

}  // namespace
}  // namespace collcomm::detail
