// Socket layer: address parsing/formatting, COLLCOMM_SOCKET_IFNAME selection on a fake interface
// list, connect retries, deadlines, abort and partial transfers.
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "support/op_signal.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

using collcomm::test::currentTid;
using collcomm::test::runWithWatchdog;
using collcomm::test::waitThreadAsleep;

SocketAddress addr(const std::string& text) {
  SocketAddress a;
  std::string why;
  EXPECT_TRUE(SocketAddress::parse(text, AF_UNSPEC, &a, &why)) << text << ": " << why;
  return a;
}

TEST(SocketAddress, ParsesAndFormatsIpv4AndIpv6) {
  SocketAddress a = addr("127.0.0.1:80");
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.port(), 80);
  EXPECT_EQ(a.toString(), "127.0.0.1:80");
  EXPECT_TRUE(a.isLoopback());

  SocketAddress b = addr("[::1]:8080");
  EXPECT_EQ(b.family(), AF_INET6);
  EXPECT_EQ(b.toString(), "[::1]:8080");
  EXPECT_TRUE(b.isLoopback());

  SocketAddress c = addr("[fd00::2]:1");
  EXPECT_EQ(c.hostString(), "fd00::2");
  EXPECT_FALSE(c.isLoopback());

  SocketAddress d = addr("localhost:7");
  EXPECT_TRUE(d.isLoopback());
  EXPECT_EQ(d.port(), 7);

  EXPECT_TRUE(addr("10.1.2.3:5") == addr("10.1.2.3:5"));
  EXPECT_FALSE(addr("10.1.2.3:5") == addr("10.1.2.3:6"));
}

TEST(SocketAddress, RejectsMalformedText) {
  for (const char* bad : {"1.2.3.4", "::1:80", "[::1]80", "[::1:80", "1.2.3.4:99999", "1.2.3.4:", ":80", "1.2.3.4:8x",
                          "no-such-host.invalid:80"}) {
    SocketAddress a;
    std::string why;
    EXPECT_FALSE(SocketAddress::parse(bad, AF_UNSPEC, &a, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  SocketAddress a;
  std::string why;
  EXPECT_FALSE(SocketAddress::parse("[::1]:80", AF_INET, &a, &why)) << "family forced to AF_INET";
}

TEST(SocketAddress, FromSockaddrChecksLength) {
  SocketAddress a = addr("1.2.3.4:5"), b;
  EXPECT_TRUE(SocketAddress::fromSockaddr(a.sa(), a.len(), &b));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(SocketAddress::fromSockaddr(a.sa(), a.len() - 1, &b));
  EXPECT_FALSE(SocketAddress::fromSockaddr(a.sa(), sizeof(sockaddr_in6), &b));
}

std::vector<NetInterface> fakeInterfaces(std::initializer_list<std::pair<const char*, const char*>> list) {
  std::vector<NetInterface> out;
  for (auto& [name, host] : list) {
    NetInterface ni;
    ni.name = name;
    std::string text = strchr(host, ':') != nullptr ? std::string("[") + host + "]:0" : std::string(host) + ":0";
    ni.addr = addr(text);
    out.push_back(ni);
  }
  return out;
}

std::vector<std::string> names(const std::vector<NetInterface>& l) {
  std::vector<std::string> out;
  for (auto& ni : l) out.push_back(ni.name);
  return out;
}

using Names = std::vector<std::string>;

TEST(InterfaceSelection, FilterSyntax) {
  IfnameFilter prefix = IfnameFilter::parse("eth,ib");
  EXPECT_TRUE(prefix.matches("eth0"));
  EXPECT_TRUE(prefix.matches("ib1"));
  EXPECT_FALSE(prefix.matches("enp1s0"));
  IfnameFilter exclude = IfnameFilter::parse("^docker,lo");
  EXPECT_FALSE(exclude.matches("docker0"));
  EXPECT_FALSE(exclude.matches("lo"));
  EXPECT_TRUE(exclude.matches("eth0"));
  IfnameFilter exact = IfnameFilter::parse("=eth0");
  EXPECT_TRUE(exact.matches("eth0"));
  EXPECT_FALSE(exact.matches("eth01"));
  IfnameFilter excludeExact = IfnameFilter::parse("^=eth0,lo");
  EXPECT_FALSE(excludeExact.matches("eth0"));
  EXPECT_TRUE(excludeExact.matches("eth01"));
  EXPECT_TRUE(excludeExact.matches("lo0"));
}

TEST(InterfaceSelection, DefaultOrderAndUserSpec) {
  auto all = fakeInterfaces({{"lo", "127.0.0.1"},
                             {"docker0", "172.17.0.1"},
                             {"eth0", "10.0.0.1"},
                             {"eth0", "fd00::1"},
                             {"ib0", "10.1.0.1"},
                             {"eth01", "10.2.0.1"},
                             {"ib1", "fd01::1"}});
  EXPECT_EQ(names(selectInterfaces(all, "", AF_UNSPEC, 8)), (Names{"ib0", "ib1"}));
  EXPECT_EQ(names(selectInterfaces(all, "", AF_UNSPEC, 1)), (Names{"ib0"}));
  EXPECT_EQ(names(selectInterfaces(all, "", AF_INET6, 8)), (Names{"ib1"}));
  // One address per interface: the first listed (eth0's IPv4 here).
  auto eth = selectInterfaces(all, "eth", AF_UNSPEC, 8);
  EXPECT_EQ(names(eth), (Names{"eth0", "eth01"}));
  EXPECT_EQ(eth[0].addr.hostString(), "10.0.0.1");
  auto eth6 = selectInterfaces(all, "eth", AF_INET6, 8);
  ASSERT_EQ(names(eth6), (Names{"eth0"}));
  EXPECT_EQ(eth6[0].addr.hostString(), "fd00::1");
  EXPECT_EQ(names(selectInterfaces(all, "=eth0", AF_UNSPEC, 8)), (Names{"eth0"}));
  EXPECT_EQ(names(selectInterfaces(all, "^ib,eth", AF_UNSPEC, 8)), (Names{"lo", "docker0"}));
  EXPECT_EQ(names(selectInterfaces(all, "^=eth0", AF_INET, 8)), (Names{"lo", "docker0", "ib0", "eth01"}));
  EXPECT_TRUE(selectInterfaces(all, "wlan", AF_UNSPEC, 8).empty());

  auto noIb = fakeInterfaces({{"lo", "127.0.0.1"}, {"docker0", "172.17.0.1"}, {"enp1s0", "10.0.0.1"}});
  EXPECT_EQ(names(selectInterfaces(noIb, "", AF_UNSPEC, 8)), (Names{"enp1s0"}));
  auto dockerOnly = fakeInterfaces({{"lo", "127.0.0.1"}, {"docker0", "172.17.0.1"}});
  EXPECT_EQ(names(selectInterfaces(dockerOnly, "", AF_UNSPEC, 8)), (Names{"docker0"}));
  auto loOnly = fakeInterfaces({{"lo", "127.0.0.1"}, {"lo", "::1"}});
  EXPECT_EQ(names(selectInterfaces(loOnly, "", AF_UNSPEC, 8)), (Names{"lo"}));
  EXPECT_TRUE(selectInterfaces({}, "", AF_UNSPEC, 8).empty());
}

TEST(InterfaceSelection, ThisMachineHasOne) {
  std::vector<NetInterface> ifs;
  ASSERT_EQ(findInterfaces(4, &ifs), kOk);
  ASSERT_FALSE(ifs.empty());
  EXPECT_TRUE(ifs[0].addr.valid());
}

SocketAddress listenLoopback(Socket* s) {
  SocketAddress bound;
  EXPECT_TRUE(Socket::listen(addr("127.0.0.1:0"), s, &bound).ok());
  EXPECT_NE(bound.port(), 0);
  return bound;
}

TEST(Socket, ConnectRetriesUntilTheListenerIsUp) {
  runWithWatchdog(20, [] {
    // Find a free port, release it, and listen on it only after the connect has started. The
    // delay is deliberate, not a synchronisation: the connect succeeds however the threads are
    // scheduled (at once if the listener is up first), it only makes its retries likely to run.
    Socket probe;
    SocketAddress target = listenLoopback(&probe);
    probe.close();
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Socket l;
      SocketAddress bound;
      ASSERT_TRUE(Socket::listen(target, &l, &bound).ok());
      Socket in;
      EXPECT_TRUE(l.accept(deadlineInMs(5000), nullptr, &in).ok());
    });
    Socket c;
    IoStatus s = Socket::connect(target, deadlineInMs(5000), nullptr, &c);
    EXPECT_TRUE(s.ok()) << s.describe();
    late.join();
  });
}

TEST(Socket, ConnectToNobodyTimesOutWithTheLastError) {
  runWithWatchdog(20, [] {
    Socket probe;
    SocketAddress target = listenLoopback(&probe);
    probe.close();
    Socket c;
    auto t0 = std::chrono::steady_clock::now();
    IoStatus s = Socket::connect(target, deadlineInMs(300), nullptr, &c);
    EXPECT_EQ(s.code, IoCode::kTimeout);
    EXPECT_EQ(s.err, ECONNREFUSED);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  });
}

// A socket bound to a port and connected to that same port meets itself (TCP simultaneous open),
// as a connect to an unlistened ephemeral port occasionally does by chance; a real pair does not.
TEST(Socket, SeesAConnectionToItself) {
  Socket probe;
  SocketAddress target = listenLoopback(&probe);
  probe.close();
  Socket self(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(self.valid());
  int one = 1;
  ASSERT_EQ(setsockopt(self.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
  ASSERT_EQ(bind(self.fd(), target.sa(), target.len()), 0) << strerror(errno);
  ASSERT_EQ(::connect(self.fd(), target.sa(), target.len()), 0) << strerror(errno);
  EXPECT_TRUE(connectedToItself(self.fd()));

  Socket l;
  SocketAddress a = listenLoopback(&l);
  Socket c, in;
  ASSERT_TRUE(Socket::connect(a, deadlineInMs(5000), nullptr, &c).ok());
  ASSERT_TRUE(l.accept(deadlineInMs(5000), nullptr, &in).ok());
  EXPECT_FALSE(connectedToItself(c.fd()));
  EXPECT_FALSE(connectedToItself(in.fd()));
}

TEST(Socket, DeadlineAbortAndLargeTransfers) {
  runWithWatchdog(30, [] {
    Socket l;
    SocketAddress a = listenLoopback(&l);
    Socket c, s;
    ASSERT_TRUE(Socket::connect(a, deadlineInMs(5000), nullptr, &c).ok());
    ASSERT_TRUE(l.accept(deadlineInMs(5000), nullptr, &s).ok());

    char byte;
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(s.recvAll(&byte, 1, deadlineInMs(200), nullptr).code, IoCode::kTimeout);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(150));

    std::atomic<bool> abortFlag{false};
    // Raises the flag once this thread sleeps in the recv's wait, so the abort ends a blocked recv.
    const pid_t receiver = currentTid();
    std::thread aborter([&] {
      EXPECT_TRUE(waitThreadAsleep(receiver)) << "the recv did not block";
      abortFlag = true;
    });
    t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(s.recvAll(&byte, 1, Deadline::never(), &abortFlag).code, IoCode::kAborted);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    aborter.join();

    // Far more than the socket buffers: both sides make partial progress.
    std::vector<uint32_t> out(4 << 20), in(out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint32_t>(i * 2654435761u);
    std::thread sender([&] { EXPECT_TRUE(c.sendAll(out.data(), out.size() * 4, deadlineInMs(20000), nullptr).ok()); });
    EXPECT_TRUE(s.recvAll(in.data(), in.size() * 4, deadlineInMs(20000), nullptr).ok());
    sender.join();
    EXPECT_EQ(in, out);

    c.close();
    IoStatus eof = s.recvAll(&byte, 1, deadlineInMs(2000), nullptr);
    EXPECT_EQ(eof.code, IoCode::kClosed);
    EXPECT_EQ(eof.err, 0);
  });
}

}  // namespace
}  // namespace collcomm::detail
