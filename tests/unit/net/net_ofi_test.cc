// The OFI (libfabric) backend of the net interface, over the tcp and shm providers where this host
// has them: devices and properties, handshake with secret checks, messages of 0 .. 64 MiB, order
// and tag matching with many in flight, errors (a too-small buffer, a peer that closed), the
// receiver's farewell, over tcp whole-segment steps, a provider that does not exist, the default
// provider's order, and backend selection by COLLCOMM_NET.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "support/net_pair.h"
#include "support/ofi_provider.h"
#include "support/watchdog.h"
#include "transport/net/net.h"
#if __has_include(<rdma/fabric.h>)
#include "transport/net/net_ofi_internal.h"
#endif

namespace collcomm::detail {
namespace {

const NetSecret kSecret{{0x1234, 0x5678}};
using Clock = std::chrono::steady_clock;

class NetOfi : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    CC_REQUIRE_OFI_PROVIDER(GetParam());
    setenv("COLLCOMM_OFI_PROVIDER", GetParam(), 1);
    ASSERT_EQ(net().init(), kOk) << threadLastError();
  }
  void TearDown() override { unsetenv("COLLCOMM_OFI_PROVIDER"); }
  static const NetOpsV1& net() { return ofiNet(); }
};

using Pair = test::NetPair<ofiNet>;

bool connectPair(Pair* p) {
  const NetOpsV1& n = ofiNet();
  unsigned char handle[kNetHandleBytes];
  EXPECT_EQ(n.listen(0, kSecret, handle, &p->listen), kOk);
  const auto until = Clock::now() + std::chrono::seconds(10);
  while ((p->send == nullptr || p->recv == nullptr) && Clock::now() < until) {
    if (p->send == nullptr && n.connect(0, kSecret, handle, &p->send) != kOk) return false;
    if (p->recv == nullptr && n.accept(p->listen, &p->recv) != kOk) return false;
  }
  return p->send != nullptr && p->recv != nullptr;
}

// Tests requests of both sides in turn until all are done; false on error or after 60 s.
bool waitAll(std::vector<void*> reqs, std::vector<size_t>* sizes = nullptr, Status* err = nullptr) {
  std::vector<bool> done(reqs.size(), false);
  if (sizes != nullptr) sizes->assign(reqs.size(), 0);
  size_t left = reqs.size();
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (left > 0 && Clock::now() < until) {
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (done[i]) continue;
      bool d = false;
      size_t sz = 0;
      const Status s = ofiNet().test(reqs[i], &d, &sz);
      if (!isOk(s)) {
        if (err != nullptr) *err = s;
        return false;
      }
      if (d) {
        done[i] = true;
        --left;
        if (sizes != nullptr) (*sizes)[i] = sz;
      }
    }
  }
  return left == 0;
}

void roundTrip(Pair& p, size_t bytes, uint32_t tag) {
  const NetOpsV1& n = ofiNet();
  std::vector<unsigned char> src(bytes), dst(bytes + 1, 0xee);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>((i * 131 + bytes) >> 3);
  void *sreq = nullptr, *rreq = nullptr;
  void* buf = dst.data();
  const size_t cap = bytes + 1;
  ASSERT_EQ(n.irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &rreq), kOk);
  ASSERT_EQ(n.isend(p.send, src.data(), bytes, tag, nullptr, &sreq), kOk);
  ASSERT_NE(sreq, nullptr);
  ASSERT_NE(rreq, nullptr);
  std::vector<size_t> sizes;
  ASSERT_TRUE(waitAll({sreq, rreq}, &sizes)) << bytes << " bytes did not arrive: " << threadLastError();
  EXPECT_EQ(sizes[1], bytes);
  if (bytes != 0) {
    EXPECT_EQ(memcmp(src.data(), dst.data(), bytes), 0) << bytes << " bytes arrived corrupted";
  }
  EXPECT_EQ(dst[bytes], 0xee) << "wrote past the message";
}

TEST_P(NetOfi, DevicesHavePropertiesAndTheContractVersion) {
  EXPECT_EQ(net().version, kNetInterfaceVersion);
  EXPECT_STREQ(net().name, "OFI");
  int count = 0;
  ASSERT_EQ(net().devices(&count), kOk);
  ASSERT_GT(count, 0);
  NetProperties props{};
  ASSERT_EQ(net().getProperties(0, &props), kOk);
  EXPECT_NE(props.name[0], '\0');
  EXPECT_NE(props.address[0], '\0');
  EXPECT_GE(props.maxMessageBytes, uint64_t{1} << 30);
  EXPECT_EQ(props.maxRecvs, 1);
}

TEST_P(NetOfi, EverySizeArrivesIntact) {
  test::Watchdog dog(120, "net ofi sizes");
  Pair p;
  ASSERT_TRUE(connectPair(&p)) << threadLastError();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{4095}, size_t{65536}, size_t{65537},
                       size_t{1} << 20, (size_t{3} << 20) + 5, size_t{64} << 20})
    roundTrip(p, bytes, static_cast<uint32_t>(bytes % 7));
}

// 32 messages of one tag in flight, sizes mixed (eager and rendezvous): each receive gets its own,
// in posting order.
TEST_P(NetOfi, ManyMessagesInFlightKeepTheirOrder) {
  test::Watchdog dog(120, "net ofi order");
  Pair p;
  ASSERT_TRUE(connectPair(&p)) << threadLastError();
  constexpr int kCount = kNetMaxRequests;
  std::vector<std::vector<unsigned char>> src(kCount), dst(kCount);
  std::vector<void*> reqs;
  for (int m = 0; m < kCount; ++m) {
    const size_t bytes = (m % 3 == 0) ? (size_t{1} << 20) + m : 100 + m;
    src[m].assign(bytes, static_cast<unsigned char>(m));
    dst[m].assign(bytes, 0);
    void* buf = dst[m].data();
    const size_t cap = bytes;
    const uint32_t tag = 5;
    void* r = nullptr;
    ASSERT_EQ(net().irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &r), kOk);
    ASSERT_NE(r, nullptr);
    reqs.push_back(r);
  }
  for (int m = 0; m < kCount; ++m) {
    void* s = nullptr;
    ASSERT_EQ(net().isend(p.send, src[m].data(), src[m].size(), 5, nullptr, &s), kOk);
    ASSERT_NE(s, nullptr);
    reqs.push_back(s);
  }
  std::vector<size_t> sizes;
  ASSERT_TRUE(waitAll(reqs, &sizes)) << threadLastError();
  for (int m = 0; m < kCount; ++m) {
    EXPECT_EQ(sizes[m], src[m].size()) << "receive " << m;
    EXPECT_EQ(dst[m], src[m]) << "receive " << m << " got another message";
  }
}

// Messages of two tags sent interleaved land in the receives of their own tag, whichever posted first;
// and messages of two connections never meet.
TEST_P(NetOfi, ReceivesMatchTheirTagAndTheirConnection) {
  test::Watchdog dog(60, "net ofi tags");
  Pair a, b;
  ASSERT_TRUE(connectPair(&a)) << threadLastError();
  ASSERT_TRUE(connectPair(&b)) << threadLastError();
  uint32_t got[4] = {};
  std::vector<void*> reqs;
  const uint32_t tags[4] = {1, 0, 1, 0};
  void* recvs[4] = {a.recv, a.recv, b.recv, b.recv};
  for (int i = 0; i < 4; ++i) {
    void* buf = &got[i];
    const size_t cap = sizeof(uint32_t);
    void* r = nullptr;
    ASSERT_EQ(net().irecv(recvs[i], 1, &buf, &cap, &tags[i], nullptr, &r), kOk);
    reqs.push_back(r);
  }
  const uint32_t vals[4] = {100, 101, 200, 201};  // a: tag 0, tag 1; b: tag 0, tag 1
  void* sends[4] = {a.send, a.send, b.send, b.send};
  for (int i = 0; i < 4; ++i) {
    void* s = nullptr;
    ASSERT_EQ(net().isend(sends[i], &vals[i], sizeof(uint32_t), static_cast<uint32_t>(i % 2), nullptr, &s), kOk);
    reqs.push_back(s);
  }
  ASSERT_TRUE(waitAll(reqs)) << threadLastError();
  EXPECT_EQ(got[0], 101u);
  EXPECT_EQ(got[1], 100u);
  EXPECT_EQ(got[2], 201u);
  EXPECT_EQ(got[3], 200u);
}

TEST_P(NetOfi, WrongSecretIsDroppedAndTheRightPeerStillConnects) {
  test::Watchdog dog(60, "net ofi secret");
  unsigned char handle[kNetHandleBytes];
  void* listen = nullptr;
  ASSERT_EQ(net().listen(0, kSecret, handle, &listen), kOk);
  unsigned char h2[kNetHandleBytes];
  memcpy(h2, handle, sizeof(h2));
  const NetSecret wrong{{0x1234, 0x5679}};
  void* intruder = nullptr;
  void* recv = nullptr;
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (intruder == nullptr && Clock::now() < until) {
    ASSERT_EQ(net().connect(0, wrong, h2, &intruder), kOk);
    ASSERT_EQ(net().accept(listen, &recv), kOk);
    ASSERT_EQ(recv, nullptr);
  }
  ASSERT_NE(intruder, nullptr);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(net().accept(listen, &recv), kOk);
    ASSERT_EQ(recv, nullptr) << "a connection with the wrong secret was accepted";
    // The intruder's endpoint needs progress for its hello to leave.
    if (void* r = nullptr; i % 10 == 0) {
      uint32_t x = 0;
      if (isOk(net().isend(intruder, &x, sizeof(x), 0, nullptr, &r)) && r != nullptr) {
        bool d = false;
        (void)net().test(r, &d, nullptr);
      }
    }
    poll(nullptr, 0, 2);
  }
  void* send = nullptr;
  const auto until2 = Clock::now() + std::chrono::seconds(10);
  while ((send == nullptr || recv == nullptr) && Clock::now() < until2) {
    if (send == nullptr) {
      ASSERT_EQ(net().connect(0, kSecret, handle, &send), kOk);
    }
    if (recv == nullptr) {
      ASSERT_EQ(net().accept(listen, &recv), kOk);
    }
  }
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  Pair p;
  p.send = send;
  p.recv = recv;
  p.listen = listen;
  roundTrip(p, 100000, 3);
  (void)net().closeSend(intruder);
}

TEST_P(NetOfi, TooLargeMessageAndClosedPeerAreErrors) {
  test::Watchdog dog(60, "net ofi errors");
  {
    Pair p;
    ASSERT_TRUE(connectPair(&p)) << threadLastError();
    char big[100] = {};
    char small[10];
    void *s = nullptr, *r = nullptr;
    uint32_t tag = 0;
    ASSERT_EQ(net().isend(p.send, big, sizeof(big), 0, nullptr, &s), kOk);
    void* buf = small;
    size_t cap = sizeof(small);
    ASSERT_EQ(net().irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &r), kOk);
    Status err = kOk;
    EXPECT_FALSE(waitAll({r}, nullptr, &err));
    EXPECT_EQ(err, Status::kRemoteError);
    EXPECT_NE(threadLastError().find("arrived for a buffer of 10 bytes"), std::string::npos) << threadLastError();
  }
  {
    Pair p;
    ASSERT_TRUE(connectPair(&p)) << threadLastError();
    roundTrip(p, 1000, 0);
    ASSERT_EQ(net().closeSend(p.send), kOk);
    p.send = nullptr;
    char buf[8];
    void* b = buf;
    size_t cap = sizeof(buf);
    uint32_t tag = 0;
    void* r = nullptr;
    clearThreadLastError();
    ASSERT_EQ(net().irecv(p.recv, 1, &b, &cap, &tag, nullptr, &r), kOk);
    Status err = kOk;
    EXPECT_FALSE(waitAll({r}, nullptr, &err));
    EXPECT_EQ(err, Status::kRemoteError);
    EXPECT_EQ(threadLastError(), "") << "a peer's normal close was reported as a warning";
  }
}

// Sends until a send fails (the receiver closed); the failing Status (kOk: nothing failed in 20 s).
// Small messages: the receiver posts no receives, and rxm (libfabric 1.17) holds an unexpected
// message larger than its bounce buffers (1 KiB here) in a buffer of its own that closing the
// endpoint does not free (LeakSanitizer found two of 1 MiB when these were 1 MiB sends). Fewer
// bytes wait unread as the receiver closes, so a farewell sent without delivery completion fails
// the test less often over tcp's own endpoints: 1 run in 6 (1 MiB sends: 3 in 4).
Status sendUntilBroken(void* send) {
  std::vector<char> big(512, 1);
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < until) {
    void* req = nullptr;
    Status s = ofiNet().isend(send, big.data(), big.size(), 0, nullptr, &req);
    if (!isOk(s)) return s;
    if (req == nullptr) continue;
    Status err = kOk;
    if (!waitAll({req}, nullptr, &err)) return isOk(err) ? Status::kTimeout : err;
  }
  return kOk;
}

// The receiver leaves on a thread of its own while the sender keeps sending, as ranks leave: the
// farewell reaches the sender before its sends fail. (libfabric 1.18's tcp drops what arrived on a
// connection once it sees the connection reset, so the backend's close waits, bounded, until the
// peer has the farewell: that needs the sender's progress, as a rank's proxy gives.)
TEST_P(NetOfi, FarewellReachesTheSenderWhoseSendsFail) {
  test::Watchdog dog(90, "net ofi farewell");
  for (bool sayIt : {true, false}) {
    Pair p;
    ASSERT_TRUE(connectPair(&p)) << threadLastError();
    roundTrip(p, 100000, 0);
    std::thread leaver([&] {
      if (sayIt) {
        EXPECT_EQ(net().farewell(p.recv, 0xc0ffee07u), kOk);
      }
      EXPECT_EQ(net().closeRecv(p.recv), kOk);
    });
    clearThreadLastError();
    EXPECT_EQ(sendUntilBroken(p.send), Status::kRemoteError);
    leaver.join();
    p.recv = nullptr;
    uint32_t word = 0;
    EXPECT_EQ(net().peerFarewell(p.send, &word), sayIt);
    if (sayIt) {
      EXPECT_EQ(word, 0xc0ffee07u);
    }
    EXPECT_EQ(threadLastError(), "") << "a peer's close was reported as a warning";
  }
}

// Over tcp a step travels as the provider's header and the payload on one TCP stream: the backend
// names a step size that leaves in whole segments, as the socket backend does.
TEST_P(NetOfi, TcpNamesAStepOfWholeSegments) {
  ASSERT_NE(net().wholeSegmentBytes, nullptr);
  const size_t step = net().wholeSegmentBytes(0, size_t{128} << 10, 64);
  EXPECT_GT(step, size_t{64} << 10) << "a 128 KiB step cut to less than half";
  EXPECT_LE(step, size_t{128} << 10);
  EXPECT_EQ(step % 64, 0u);
  EXPECT_EQ(net().wholeSegmentBytes(0, 64, 64), 0u) << "a step shorter than one segment needs no cut";
}

// Not shm: libfabric 1.17's shm provider crashes (in pthread_spin_lock) sending to an endpoint of
// the same process that has closed, which the goodbye of the second comm of a pair does.
INSTANTIATE_TEST_SUITE_P(Providers, NetOfi, ::testing::Values("tcp"),
                         [](const auto& info) { return std::string(info.param); });

TEST(NetOfiSelect, UnknownProviderFailsInitWithASentence) {
  std::string why;
  setenv("COLLCOMM_OFI_PROVIDER", "no_such_provider", 1);
  clearThreadLastError();
  EXPECT_EQ(ofiNet().init(), Status::kSystemError);
  EXPECT_NE(threadLastError().find("no_such_provider"), std::string::npos) << threadLastError();
  int n = -1;
  EXPECT_EQ(ofiNet().devices(&n), kOk);
  EXPECT_EQ(n, 0);
  unsetenv("COLLCOMM_OFI_PROVIDER");
}

#if __has_include(<rdma/fabric.h>)
// libfabric 1.18 on offers tcp's own reliable endpoints beside rxm over tcp (1.17: rxm's only); the
// default takes tcp's own, RDMA providers first, and a provider asked for by name wins.
TEST(NetOfiSelect, DefaultPrefersTcpsOwnEndpointsToRxmOverTcp) {
  using netofi::chooseProvider;
  EXPECT_EQ(chooseProvider({"tcp;ofi_rxm", "tcp", "udp;ofi_rxd", "shm"}, ""), "tcp");
  EXPECT_EQ(chooseProvider({"tcp;ofi_rxm", "udp;ofi_rxd", "shm"}, ""), "tcp;ofi_rxm");
  EXPECT_EQ(chooseProvider({"tcp", "tcp;ofi_rxm", "verbs;ofi_rxm"}, ""), "verbs;ofi_rxm");
  EXPECT_EQ(chooseProvider({"tcp;ofi_rxm", "tcp"}, "tcp;ofi_rxm"), "tcp;ofi_rxm");
  EXPECT_EQ(chooseProvider({"shm", "sockets", "udp;ofi_rxd"}, ""), "") << "none of these carries a job by default";
  EXPECT_EQ(chooseProvider({"shm"}, "shm"), "shm");
}
#endif

TEST(NetOfiSelect, CollcommNetPicksTheBackend) {
  EXPECT_STREQ(selectedNet().name, "Socket");
  setenv("COLLCOMM_NET", "ofi", 1);
  EXPECT_STREQ(selectedNet().name, "OFI");
  setenv("COLLCOMM_NET", "socket", 1);
  EXPECT_STREQ(selectedNet().name, "Socket");
  unsetenv("COLLCOMM_NET");
}

}  // namespace
}  // namespace collcomm::detail
