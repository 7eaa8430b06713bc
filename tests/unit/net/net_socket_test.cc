// The socket backend of the net interface over this host's interfaces: handshake with secret
// checks, messages of 0 .. 64 MiB inline and split across sockets (partial sends and receives
// happen at these sizes), tag matching, errors, IPv6 loopback, a receiver's farewell, and that a
// peer closing its end is no warning, and that a receiving control socket delays its ACKs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <vector>

#include "bootstrap/socket.h"
#include "common/status.h"
#include "support/ipv6_loopback.h"
#include "support/net_pair.h"
#include "support/watchdog.h"
#include "tcp_segments.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_internal.h"

namespace collcomm::detail {
namespace {

const NetSecret kSecret{{0x1234, 0x5678}};

using Pair = test::NetPair<socketNet>;

// Connects a pair over device 0 with the given socket shape; false (with a test failure) on error.
bool connectPair(Pair* p, const char* nthreads, const char* nsocks) {
  setenv("COLLCOMM_SOCKET_NTHREADS", nthreads, 1);
  setenv("COLLCOMM_NSOCKS_PERTHREAD", nsocks, 1);
  const NetOpsV1& n = socketNet();
  unsigned char handle[kNetHandleBytes];
  EXPECT_EQ(n.listen(0, kSecret, handle, &p->listen), kOk);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((p->send == nullptr || p->recv == nullptr) && std::chrono::steady_clock::now() < until) {
    if (p->send == nullptr && n.connect(0, kSecret, handle, &p->send) != kOk) return false;
    if (p->recv == nullptr && n.accept(p->listen, &p->recv) != kOk) return false;
  }
  unsetenv("COLLCOMM_SOCKET_NTHREADS");
  unsetenv("COLLCOMM_NSOCKS_PERTHREAD");
  return p->send != nullptr && p->recv != nullptr;
}

// Waits for one request; false on error or after 30 s.
bool wait(void* req, size_t* size, Status* err = nullptr) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    bool done = false;
    Status s = socketNet().test(req, &done, size);
    if (!isOk(s)) {
      if (err != nullptr) *err = s;
      return false;
    }
    if (done) return true;
  }
  return false;
}

// Sends and receives one message both ways through the backend, progressing both sides.
void roundTrip(Pair& p, size_t bytes, uint32_t tag) {
  const NetOpsV1& n = socketNet();
  std::vector<unsigned char> src(bytes), dst(bytes + 1, 0xee);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>((i * 131 + bytes) >> 3);
  void* sreq = nullptr;
  void* rreq = nullptr;
  ASSERT_EQ(n.isend(p.send, src.data(), bytes, tag, nullptr, &sreq), kOk);
  ASSERT_NE(sreq, nullptr);
  void* buf = dst.data();
  const size_t cap = bytes + 1;
  ASSERT_EQ(n.irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &rreq), kOk);
  ASSERT_NE(rreq, nullptr);
  bool sDone = false, rDone = false;
  size_t got = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(sDone && rDone) && std::chrono::steady_clock::now() < until) {
    if (!sDone) {
      ASSERT_EQ(n.test(sreq, &sDone, nullptr), kOk);
    }
    if (!rDone) {
      ASSERT_EQ(n.test(rreq, &rDone, &got), kOk);
    }
  }
  ASSERT_TRUE(sDone && rDone) << bytes << " bytes did not arrive";
  EXPECT_EQ(got, bytes);
  if (bytes != 0) {
    EXPECT_EQ(memcmp(src.data(), dst.data(), bytes), 0) << bytes << " bytes arrived corrupted";
  }
  EXPECT_EQ(dst[bytes], 0xee) << "wrote past the message";
}

TEST(NetSocket, DevicesHavePropertiesAndTheContractVersion) {
  const NetOpsV1& n = socketNet();
  EXPECT_EQ(n.version, kNetInterfaceVersion);
  ASSERT_EQ(n.init(), kOk);
  int count = 0;
  ASSERT_EQ(n.devices(&count), kOk);
  ASSERT_GE(count, 1);
  NetProperties props{};
  ASSERT_EQ(n.getProperties(0, &props), kOk);
  EXPECT_NE(props.name[0], '\0');
  EXPECT_GE(props.speedMbps, 0);
  EXPECT_EQ(props.maxRecvs, 1);
}

TEST(NetSocket, SocketShapeFollowsSpeedAndCpusUnlessSet) {
  int t = 0, s = 0;
  socketThreadsAndSockets(0, 64, &t, &s);
  EXPECT_EQ(t * s, 2);
  socketThreadsAndSockets(0, 0, &t, &s);  // CPUs unknown: as if plenty
  EXPECT_EQ(t * s, 2);
  socketThreadsAndSockets(100000, 64, &t, &s);
  EXPECT_EQ(t, 4);
  // A process on one or two CPUs: no helper threads, everything on the control socket.
  for (int cpus : {1, 2, 3}) {
    socketThreadsAndSockets(100000, cpus, &t, &s);
    EXPECT_EQ(t, 0) << cpus << " CPUs";
    EXPECT_EQ(s, 0) << cpus << " CPUs";
  }
  EXPECT_GE(processCpus(), 1);
  setenv("COLLCOMM_SOCKET_NTHREADS", "3", 1);
  setenv("COLLCOMM_NSOCKS_PERTHREAD", "5", 1);
  socketThreadsAndSockets(0, 1, &t, &s);  // set explicitly: the CPUs do not matter
  EXPECT_EQ(t, 3);
  EXPECT_EQ(s, 5);
  setenv("COLLCOMM_SOCKET_NTHREADS", "16", 1);
  setenv("COLLCOMM_NSOCKS_PERTHREAD", "64", 1);
  socketThreadsAndSockets(0, 64, &t, &s);
  EXPECT_LE(t * s, 64);
  unsetenv("COLLCOMM_SOCKET_NTHREADS");
  unsetenv("COLLCOMM_NSOCKS_PERTHREAD");
}

class NetSocketShapes : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(NetSocketShapes, EverySizeArrivesIntact) {
  test::Watchdog dog(240, "net socket sizes");
  Pair p;
  ASSERT_TRUE(connectPair(&p, GetParam().first, GetParam().second));
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{4096}, size_t{65535}, size_t{65536}, size_t{65537},
                       size_t{200000}, size_t{1} << 20, (size_t{1} << 20) + 13, size_t{64} << 20})
    roundTrip(p, bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NetSocketShapes,
                         ::testing::Values(std::make_pair("0", "1"), std::make_pair("1", "1"),
                                           std::make_pair("2", "2"), std::make_pair("4", "3")),
                         [](const auto& info) {
                           return std::string(info.param.first) + "threads_" + info.param.second + "socks";
                         });

TEST(NetSocket, ManyMessagesInFlightKeepTheirOrder) {
  test::Watchdog dog(120, "net socket order");
  Pair p;
  ASSERT_TRUE(connectPair(&p, "2", "2"));
  const NetOpsV1& n = socketNet();
  constexpr int kMsgs = 16;
  std::vector<std::vector<uint32_t>> src(kMsgs), dst(kMsgs);
  void* sreq[kMsgs];
  void* rreq[kMsgs];
  for (int m = 0; m < kMsgs; ++m) {
    const size_t words = m % 2 == 0 ? 10 + m : 60000 + 977 * m;  // inline and chunked mixed
    src[m].resize(words);
    std::iota(src[m].begin(), src[m].end(), static_cast<uint32_t>(m) << 24);
    dst[m].assign(words, 0);
    ASSERT_EQ(n.isend(p.send, src[m].data(), words * 4, 7, nullptr, &sreq[m]), kOk);
    ASSERT_NE(sreq[m], nullptr);
    void* buf = dst[m].data();
    size_t cap = words * 4;
    uint32_t tag = 7;
    ASSERT_EQ(n.irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &rreq[m]), kOk);
    ASSERT_NE(rreq[m], nullptr);
  }
  for (int m = 0; m < kMsgs; ++m) {
    size_t got = 0;
    ASSERT_TRUE(wait(rreq[m], &got)) << "message " << m;
    EXPECT_EQ(got, src[m].size() * 4);
    EXPECT_EQ(src[m], dst[m]) << "message " << m;
  }
  for (int m = 0; m < kMsgs; ++m) ASSERT_TRUE(wait(sreq[m], nullptr));
}

TEST(NetSocket, ReceivesMatchTheirTag) {
  test::Watchdog dog(60, "net socket tags");
  Pair p;
  ASSERT_TRUE(connectPair(&p, "1", "2"));
  const NetOpsV1& n = socketNet();
  uint32_t a = 0xaaaa, b = 0xbbbb, ra = 0, rb = 0;
  void *s1, *s2, *r1, *r2;
  ASSERT_EQ(n.isend(p.send, &a, 4, 1, nullptr, &s1), kOk);
  ASSERT_EQ(n.isend(p.send, &b, 4, 2, nullptr, &s2), kOk);
  // Posted in the other order: each message goes to the receive of its tag.
  void* bufB = &rb;
  void* bufA = &ra;
  size_t cap = 4;
  uint32_t t2 = 2, t1 = 1;
  ASSERT_EQ(n.irecv(p.recv, 1, &bufB, &cap, &t2, nullptr, &r2), kOk);
  ASSERT_EQ(n.irecv(p.recv, 1, &bufA, &cap, &t1, nullptr, &r1), kOk);
  size_t got = 0;
  ASSERT_TRUE(wait(r2, &got));
  ASSERT_TRUE(wait(r1, &got));
  EXPECT_EQ(ra, a);
  EXPECT_EQ(rb, b);
  ASSERT_TRUE(wait(s1, nullptr));
  ASSERT_TRUE(wait(s2, nullptr));
}

// Every receive posted and every message sent before the receiver reads, so that its reads find
// several messages of two tags and many sizes queued (small ones through the staging buffer with
// the next header, large ones straight into their buffers, messages shorter than their buffers),
// and every byte must still land in its own receive.
TEST(NetSocket, QueuedMessagesOfTwoTagsLandInTheirOwnReceives) {
  test::Watchdog dog(60, "net socket queued messages");
  Pair p;
  ASSERT_TRUE(connectPair(&p, "0", "1"));
  const NetOpsV1& n = socketNet();
  struct Msg {
    uint32_t tag;
    size_t bytes;
  };
  const Msg msgs[] = {{2, 16},   {0, 100},  {2, 6000},   {0, 5000}, {2, 0},      {0, 0},    {2, 9000},
                      {0, 130944}, {2, 4096}, {0, 70000}, {0, 7},    {0, 130944}, {2, 100}, {0, 130944}};
  constexpr size_t kCount = sizeof(msgs) / sizeof(msgs[0]);
  std::vector<std::vector<unsigned char>> src(kCount), dst(kCount);
  void* sreq[kCount];
  void* rreq[kCount];
  // Receives of tag 0 are as large as a Simple slot, those of tag 2 fit their message.
  for (size_t m = 0; m < kCount; ++m) {
    const size_t cap = msgs[m].tag == 0 ? 131072 : msgs[m].bytes;
    dst[m].assign(cap, 0xee);
    void* buf = dst[m].data();
    uint32_t tag = msgs[m].tag;
    ASSERT_EQ(n.irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &rreq[m]), kOk);
    ASSERT_NE(rreq[m], nullptr);
  }
  for (size_t m = 0; m < kCount; ++m) {
    src[m].resize(msgs[m].bytes);
    for (size_t i = 0; i < msgs[m].bytes; ++i) src[m][i] = static_cast<unsigned char>(i * 7 + m * 31 + 1);
    ASSERT_EQ(n.isend(p.send, src[m].data(), msgs[m].bytes, msgs[m].tag, nullptr, &sreq[m]), kOk);
    ASSERT_NE(sreq[m], nullptr);
  }
  std::vector<bool> sent(kCount, false), arrived(kCount, false);
  std::vector<size_t> got(kCount, 0);
  size_t left = 2 * kCount;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (left > 0 && std::chrono::steady_clock::now() < until) {
    for (size_t m = 0; m < kCount; ++m) {
      if (!sent[m]) {
        bool done = false;
        ASSERT_EQ(n.test(sreq[m], &done, nullptr), kOk);
        if (done) sent[m] = true, --left;
      }
    }
    for (size_t m = 0; m < kCount; ++m) {
      if (!arrived[m]) {
        bool done = false;
        ASSERT_EQ(n.test(rreq[m], &done, &got[m]), kOk);
        if (done) arrived[m] = true, --left;
      }
    }
  }
  ASSERT_EQ(left, 0u) << "messages did not arrive in 10 s";
  for (size_t m = 0; m < kCount; ++m) {
    EXPECT_EQ(got[m], msgs[m].bytes) << "receive " << m;
    EXPECT_TRUE(std::equal(src[m].begin(), src[m].end(), dst[m].begin())) << "receive " << m << " corrupted";
  }
}

TEST(NetSocket, WrongSecretAndGarbageAreDroppedAndTheRightPeerStillConnects) {
  test::Watchdog dog(60, "net socket secret");
  const NetOpsV1& n = socketNet();
  unsigned char handle[kNetHandleBytes];
  void* listen = nullptr;
  ASSERT_EQ(n.listen(0, kSecret, handle, &listen), kOk);
  // An intruder with another secret: its connect completes (the kernel accepts it), accept drops it.
  unsigned char h2[kNetHandleBytes];
  memcpy(h2, handle, sizeof(h2));
  const NetSecret wrong{{0x1234, 0x5679}};
  void* intruder = nullptr;
  void* recv = nullptr;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until) {
    if (intruder == nullptr) {
      ASSERT_EQ(n.connect(0, wrong, h2, &intruder), kOk);
    }
    ASSERT_EQ(n.accept(listen, &recv), kOk);
    ASSERT_EQ(recv, nullptr) << "a connection with the wrong secret was accepted";
    if (intruder != nullptr) break;
  }
  ASSERT_NE(intruder, nullptr);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(n.accept(listen, &recv), kOk);
    ASSERT_EQ(recv, nullptr);
    poll(nullptr, 0, 2);
  }
  // Garbage from a plain TCP client.
  {
    SocketAddress addr;
    int len = 0;
    memcpy(&len, handle + 4, 4);
    ASSERT_TRUE(SocketAddress::fromSockaddr(handle + 8, static_cast<size_t>(len), &addr));
    Socket raw;
    ASSERT_TRUE(Socket::connect(addr, deadlineInMs(3000), nullptr, &raw).ok());
    const char junk[64] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_TRUE(raw.sendAll(junk, sizeof(junk), deadlineInMs(3000), nullptr).ok());
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(n.accept(listen, &recv), kOk);
      ASSERT_EQ(recv, nullptr);
      poll(nullptr, 0, 2);
    }
  }
  // The intruder learns nothing and cannot send: its peer is gone.
  // The rightful peer connects.
  void* send = nullptr;
  const auto until2 = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((send == nullptr || recv == nullptr) && std::chrono::steady_clock::now() < until2) {
    if (send == nullptr) {
      ASSERT_EQ(n.connect(0, kSecret, handle, &send), kOk);
    }
    if (recv == nullptr) {
      ASSERT_EQ(n.accept(listen, &recv), kOk);
    }
  }
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  Pair p;
  p.send = send;
  p.recv = recv;
  p.listen = listen;
  roundTrip(p, 100000, 3);
  (void)n.closeSend(intruder);
}

TEST(NetSocket, TooLargeMessageAndClosedPeerAreErrors) {
  test::Watchdog dog(60, "net socket errors");
  const NetOpsV1& n = socketNet();
  {
    Pair p;
    ASSERT_TRUE(connectPair(&p, "1", "1"));
    char big[100] = {};
    char small[10];
    void *s, *r;
    uint32_t tag = 0;
    ASSERT_EQ(n.isend(p.send, big, sizeof(big), 0, nullptr, &s), kOk);
    void* buf = small;
    size_t cap = sizeof(small);
    Status err = n.irecv(p.recv, 1, &buf, &cap, &tag, nullptr, &r);
    if (isOk(err)) {
      EXPECT_FALSE(wait(r, nullptr, &err));
    }
    EXPECT_EQ(err, Status::kRemoteError);
  }
  {
    Pair p;
    ASSERT_TRUE(connectPair(&p, "1", "1"));
    ASSERT_EQ(n.closeSend(p.send), kOk);
    p.send = nullptr;
    char buf[8];
    void* b = buf;
    size_t cap = sizeof(buf);
    uint32_t tag = 0;
    void* r = nullptr;
    // The end of the stream shows in irecv (which makes progress) or in the test after it.
    Status err = n.irecv(p.recv, 1, &b, &cap, &tag, nullptr, &r);
    if (isOk(err)) {
      EXPECT_FALSE(wait(r, nullptr, &err));
    }
    EXPECT_EQ(err, Status::kRemoteError);
  }
}

// Sends `bytes` until the send fails (the receiver closed); returns the failing Status (kOk when
// nothing failed within 20 s).
Status sendUntilBroken(void* send) {
  const NetOpsV1& n = socketNet();
  std::vector<char> big(size_t{8} << 20, 1);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    void* req = nullptr;
    Status s = n.isend(send, big.data(), big.size(), 0, nullptr, &req);
    if (!isOk(s)) return s;
    if (req == nullptr) continue;
    Status err = kOk;
    if (!wait(req, nullptr, &err)) return isOk(err) ? Status::kTimeout : err;
  }
  return kOk;
}

class NetSocketFarewell : public ::testing::TestWithParam<const char*> {};

// A receiver that leaves first says why (the NET transport sends its PeerState): the sender reads
// the word once its sends fail, whether the control socket or a data socket reports the close.
TEST_P(NetSocketFarewell, ReachesTheSenderWhoseSendsFail) {
  test::Watchdog dog(60, "net socket farewell");
  const NetOpsV1& n = socketNet();
  ASSERT_NE(n.farewell, nullptr);
  ASSERT_NE(n.peerFarewell, nullptr);
  for (bool sayIt : {true, false}) {
    Pair p;
    ASSERT_TRUE(connectPair(&p, GetParam(), "2"));
    roundTrip(p, 100000, 0);  // the connection works
    if (sayIt) {
      ASSERT_EQ(n.farewell(p.recv, 0xc0ffee07u), kOk);
    }
    ASSERT_EQ(n.closeRecv(p.recv), kOk);
    p.recv = nullptr;
    clearThreadLastError();
    EXPECT_EQ(sendUntilBroken(p.send), Status::kRemoteError);
    uint32_t word = 0;
    EXPECT_EQ(n.peerFarewell(p.send, &word), sayIt);
    if (sayIt) {
      EXPECT_EQ(word, 0xc0ffee07u);
    }
    // The receiver closing its end is how a peer leaves: no warning sentence.
    EXPECT_EQ(threadLastError(), "") << "a peer's close was reported as a warning";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, NetSocketFarewell, ::testing::Values("0", "1"),
                         [](const auto& info) { return std::string(info.param) + "threads"; });

// A sender that closes after its last message: the receiver fails its next receive, quietly.
TEST(NetSocket, PeerClosingAfterItsLastMessageIsNoWarning) {
  test::Watchdog dog(60, "net socket close");
  const NetOpsV1& n = socketNet();
  Pair p;
  ASSERT_TRUE(connectPair(&p, "0", "1"));
  roundTrip(p, 1000, 0);
  ASSERT_EQ(n.closeSend(p.send), kOk);
  p.send = nullptr;
  char buf[8];
  void* b = buf;
  size_t cap = sizeof(buf);
  uint32_t tag = 0;
  void* r = nullptr;
  clearThreadLastError();
  ASSERT_EQ(n.irecv(p.recv, 1, &b, &cap, &tag, nullptr, &r), kOk);
  Status err = kOk;
  EXPECT_FALSE(wait(r, nullptr, &err));
  EXPECT_EQ(err, Status::kRemoteError);
  EXPECT_EQ(threadLastError(), "") << "a peer's normal close was reported as a warning";
}

// A receiving control socket runs in delayed-ACK mode once a message came in (readCtrl): the
// kernel reports TCP_QUICKACK as 0 then, and as 1 on a fresh one-way socket. The kernel leaves the
// mode by itself when a delayed ACK times out (40 ms), which a stalled test can hit between the
// read and the look, so a fresh pair gets three tries.
TEST(NetSocket, ReceivingControlSocketDelaysItsAcks) {
  test::Watchdog dog(60, "net socket delayed acks");
  bool delayed = false;
  for (int attempt = 0; attempt < 3 && !delayed; ++attempt) {
    Pair p;
    ASSERT_TRUE(connectPair(&p, "0", "0"));
    const int fd = static_cast<netsocket::SocketComm*>(p.recv)->ctrl.fd();
    int quick = -1;
    socklen_t len = sizeof(quick);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &quick, &len), 0) << strerror(errno);
    if (quick != 1) GTEST_SKIP() << "this kernel reports TCP_QUICKACK " << quick << " on a fresh socket";
    roundTrip(p, 8, 3);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &quick, &len), 0) << strerror(errno);
    delayed = quick == 0;
  }
  EXPECT_TRUE(delayed) << "the receiving control socket still acknowledges every message at once";
}

TEST(NetSocket, TransmitUnitFollowsMtuFamilyAndTimestamps) {
  using netsocket::tcpTransmitUnit;
  EXPECT_EQ(tcpTransmitUnit(65536, false, true), 65483u);  // loopback: IPv4 packets end at 65535 bytes
  EXPECT_EQ(tcpTransmitUnit(65536, true, true), 65464u);   // IPv6 counts its payload only
  EXPECT_EQ(tcpTransmitUnit(1500, false, true), 45u * 1448);
  EXPECT_EQ(tcpTransmitUnit(1500, false, false), 44u * 1460);
  EXPECT_EQ(tcpTransmitUnit(9000, false, true), 7u * 8948);
  EXPECT_EQ(tcpTransmitUnit(0, false, true), 0u);
  EXPECT_EQ(tcpTransmitUnit(100, false, true), 0u);
}

// Checked against the definition by search: the largest multiple of align <= max whose message
// ends in a whole unit or at most max(slack, align) bytes short of one.
TEST(NetSocket, WholeSegmentSizeIsTheLargestEndingInAFullSegment) {
  using netsocket::kWholeSegmentSlack;
  using netsocket::wholeUnitsMessage;
  EXPECT_EQ(wholeUnitsMessage(65483, 16, 131072, 64), 130944u);  // 65483 + 65477 bytes, not 2 x 65483 + 122
  EXPECT_EQ(wholeUnitsMessage(65483, 16, 130944, 64), 130944u);  // already ends nearly full
  EXPECT_EQ(wholeUnitsMessage(65160, 16, 131072, 64), 130304u);  // exactly 2 x 65160 with its header
  EXPECT_EQ(wholeUnitsMessage(65483, 16, 16384, 64), 0u);        // less than one unit: no preference
  for (size_t unit : {size_t{1448}, size_t{8948}, size_t{62636}, size_t{65160}, size_t{65464}, size_t{65483}}) {
    for (size_t overhead : {size_t{0}, size_t{16}}) {
      for (size_t align : {size_t{64}, size_t{256}}) {
        for (size_t maxBytes = 4096; maxBytes <= (size_t{1} << 20); maxBytes = maxBytes * 5 / 4 + 7) {
          const size_t slack = std::max(kWholeSegmentSlack, align);
          auto endsWhole = [&](size_t b) {
            const size_t over = (b + overhead) % unit;
            return over == 0 || over + slack >= unit;
          };
          size_t want = 0;
          for (size_t b = maxBytes / align * align; b >= align; b -= align)
            if (endsWhole(b)) {
              want = b;
              break;
            }
          if (maxBytes + overhead < unit && !endsWhole(maxBytes / align * align)) want = 0;
          EXPECT_EQ(wholeUnitsMessage(unit, overhead, maxBytes, align), want)
              << "unit " << unit << " overhead " << overhead << " align " << align << " max " << maxBytes;
        }
      }
    }
  }
}

// What the backend proposes for loopback really leaves in whole segments: messages of that size
// sent one after another take two segments each (the sender's TCP_INFO count), where 128 KiB ones
// took three. With data sockets the backend proposes nothing (its chunks are dealt as they are).
TEST(NetSocket, WholeSegmentMessagesLeaveInFullSegmentsOverLoopback) {
  test::Watchdog dog(60, "net socket whole segments");
  setenv("COLLCOMM_SOCKET_IFNAME", "=lo", 1);
  const NetOpsV1& n = socketNet();
  ASSERT_EQ(n.init(), kOk);
  setenv("COLLCOMM_SOCKET_NTHREADS", "1", 1);
  EXPECT_EQ(n.wholeSegmentBytes(0, 131072, 64), 0u);
  setenv("COLLCOMM_SOCKET_NTHREADS", "0", 1);
  const size_t bytes = n.wholeSegmentBytes(0, 131072, 64);
  unsetenv("COLLCOMM_SOCKET_NTHREADS");
  ASSERT_GT(bytes, 0u) << "no whole-segment size for loopback";
  EXPECT_LE(bytes, 131072u);
  EXPECT_EQ(bytes % 64, 0u);
  {
    Pair p;
    ASSERT_TRUE(connectPair(&p, "0", "0"));
    const int fd = static_cast<netsocket::SocketComm*>(p.send)->ctrl.fd();
    for (int warm = 0; warm < 4; ++warm) roundTrip(p, bytes, 1);  // past the window's first growth
    const int64_t before = test::tcpSegmentsOut(fd);
    if (before < 0) GTEST_SKIP() << "this kernel's TCP_INFO has no segment count";
    constexpr int kMessages = 32;
    for (int i = 0; i < kMessages; ++i) roundTrip(p, bytes, 1);
    const int64_t segments = test::tcpSegmentsOut(fd) - before;
    const int64_t units = static_cast<int64_t>((bytes + sizeof(netsocket::MsgHeader) + 65482) / 65483);
    EXPECT_LE(segments, kMessages * units + kMessages / 8)
        << kMessages << " messages of " << bytes << " bytes took " << segments << " segments";
  }
  unsetenv("COLLCOMM_SOCKET_IFNAME");
  ASSERT_EQ(n.init(), kOk);
}

// COLLCOMM_SOCKET_IFNAME=lo COLLCOMM_SOCKET_FAMILY=AF_INET6: the backend's device is ::1 and
// messages cross it intact, inline and split over data sockets.
TEST(NetSocket, Ipv6LoopbackCarriesMessages) {
  test::Watchdog dog(120, "net socket ipv6");
  if (const std::string why = test::ipv6LoopbackUnavailable(); !why.empty()) GTEST_SKIP() << why;
  setenv("COLLCOMM_SOCKET_IFNAME", "=lo", 1);
  setenv("COLLCOMM_SOCKET_FAMILY", "AF_INET6", 1);
  const NetOpsV1& n = socketNet();
  ASSERT_EQ(n.init(), kOk);
  NetProperties props{};
  ASSERT_EQ(n.getProperties(0, &props), kOk);
  EXPECT_STREQ(props.name, "lo");
  EXPECT_STREQ(props.address, "::1");
  for (const char* threads : {"0", "1"}) {
    Pair p;
    ASSERT_TRUE(connectPair(&p, threads, "2"));
    for (size_t bytes : {size_t{0}, size_t{5}, size_t{70000}, size_t{3} << 20}) roundTrip(p, bytes, 1);
  }
  unsetenv("COLLCOMM_SOCKET_IFNAME");
  unsetenv("COLLCOMM_SOCKET_FAMILY");
  ASSERT_EQ(n.init(), kOk);  // back to the default devices for the tests after this one
}

}  // namespace
}  // namespace collcomm::detail
