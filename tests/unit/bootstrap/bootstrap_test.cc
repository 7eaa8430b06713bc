// Bootstrap jobs with ranks as threads: allGather/barrier/send/recv results checked exactly, and
// every failure (hostile connections, mismatched or duplicate ranks, missing or dead peers, abort)
// ending promptly with the documented status and a sentence naming the rank.
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bootstrap/root_service.h"
#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "support/op_signal.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

using collcomm::test::currentTid;
using collcomm::test::runWithWatchdog;
using collcomm::test::waitThreadAsleep;
using Clock = std::chrono::steady_clock;

constexpr double kJobSeconds = 10;  // every init/op deadline in a passing job

struct RankResult {
  Status status = kOk;
  std::string error;
  std::unique_ptr<Bootstrap> bootstrap;
};

// Runs Bootstrap::init for each (rank, nranks) on its own thread, then `body` on the ones that
// succeeded; returns each rank's init result (the Bootstraps are destroyed when it returns).
std::vector<RankResult> runJob(const UniqueIdData& id, const std::vector<std::pair<int, int>>& ranks,
                               double initSeconds, const std::function<void(Bootstrap&)>& body = {}) {
  std::vector<RankResult> results(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      RankResult& r = results[i];
      clearThreadLastError();
      r.status =
          Bootstrap::init(id, ranks[i].first, ranks[i].second, Deadline::afterSeconds(initSeconds), &r.bootstrap);
      r.error = threadLastError();
      if (r.status == kOk && body) body(*r.bootstrap);
      r.bootstrap.reset();
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::vector<std::pair<int, int>> allRanks(int nranks) {
  std::vector<std::pair<int, int>> v;
  for (int r = 0; r < nranks; ++r) v.emplace_back(r, nranks);
  return v;
}

UniqueIdData newId() {
  UniqueIdData id{};
  EXPECT_EQ(createUniqueId(&id), kOk) << threadLastError();
  return id;
}

SocketAddress rootOf(const UniqueIdData& id) {
  SocketAddress a;
  EXPECT_TRUE(SocketAddress::fromSockaddr(id.rootAddr, id.rootAddrLen, &a));
  return a;
}

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Roots of failed jobs linger until COLLCOMM_TIMEOUT; keep that short in tests.
    setenv("COLLCOMM_TIMEOUT", "15", 1);
    unsetenv("COLLCOMM_COMM_ID");
  }
};

uint8_t pattern(int rank, size_t i) { return static_cast<uint8_t>(rank * 131 + i * 7 + (i >> 8)); }

TEST_F(BootstrapTest, AllGatherDistinctData) {
  for (int nranks : {1, 2, 3, 5, 8}) {
    SCOPED_TRACE("nranks=" + std::to_string(nranks));
    runWithWatchdog(30, [&] {
      UniqueIdData id = newId();
      auto results = runJob(id, allRanks(nranks), kJobSeconds, [&](Bootstrap& b) {
        EXPECT_EQ(b.rank() >= 0 && b.rank() < nranks, true);
        EXPECT_EQ(b.nranks(), nranks);
        for (size_t bytes : {size_t{1}, size_t{13}, size_t{300000}}) {
          std::vector<uint8_t> data(bytes * nranks, 0xEE);
          for (size_t i = 0; i < bytes; ++i) data[b.rank() * bytes + i] = pattern(b.rank(), i);
          ASSERT_EQ(b.allGather(data.data(), bytes, Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
          for (int r = 0; r < nranks; ++r)
            for (size_t i = 0; i < bytes; ++i)
              ASSERT_EQ(data[r * bytes + i], pattern(r, i)) << "slot " << r << " byte " << i << " bytes " << bytes;
        }
        for (int r = 0; r < nranks; ++r) EXPECT_FALSE(b.hostName(r).empty());
      });
      for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
    });
  }
}

TEST_F(BootstrapTest, BarrierWaitsForEveryRank) {
  runWithWatchdog(30, [] {
    constexpr int kRanks = 5;
    std::atomic<int> arrived{0};
    auto results = runJob(newId(), allRanks(kRanks), kJobSeconds, [&](Bootstrap& b) {
      for (int phase = 1; phase <= 4; ++phase) {
        // Stagger arrivals so a barrier that does not wait would be caught. A deliberate delay, not
        // a synchronisation: the assertion below holds however the threads are scheduled, the
        // stagger only makes a barrier that lets a rank through early likely to be seen.
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * ((b.rank() + phase) % kRanks)));
        arrived.fetch_add(1);
        ASSERT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
        EXPECT_GE(arrived.load(), phase * kRanks);
        ASSERT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
      }
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

// Message content identifies (src, dst, tag, seq); sizes vary, a few exceed the socket buffers.
std::vector<uint8_t> message(int src, int dst, uint64_t tag, int seq) {
  size_t size = (seq == 1 && (src + dst) % 3 == 0) ? 400000 : (src * 7 + dst * 3 + seq * 13 + tag) % 50;
  std::vector<uint8_t> m(size);
  for (size_t i = 0; i < size; ++i) m[i] = static_cast<uint8_t>(src * 31 + dst * 17 + tag * 5 + seq * 3 + i);
  return m;
}

TEST_F(BootstrapTest, SendRecvAllPairsScrambledTagsIncludingSelf) {
  runWithWatchdog(40, [] {
    constexpr int kRanks = 4, kPerTag = 3;
    const uint64_t tags[] = {0, 1, 7, uint64_t{1} << 40};
    auto results = runJob(newId(), allRanks(kRanks), kJobSeconds, [&](Bootstrap& b) {
      std::mt19937 rng(1234 + b.rank());
      // One entry per message; shuffled, then seq numbers assigned in order per (peer, tag).
      std::vector<std::pair<int, uint64_t>> ops;
      for (int p = 0; p < kRanks; ++p)
        for (uint64_t t : tags)
          for (int k = 0; k < kPerTag; ++k) ops.emplace_back(p, t);
      auto seqOrder = [&](std::vector<std::pair<int, uint64_t>> order) {
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<std::tuple<int, uint64_t, int>> out;
        std::map<std::pair<int, uint64_t>, int> next;
        for (auto& [p, t] : order) out.emplace_back(p, t, next[{p, t}]++);
        return out;
      };
      for (auto& [p, t, seq] : seqOrder(ops)) {
        auto m = message(b.rank(), p, t, seq);
        ASSERT_EQ(b.send(p, t, m.data(), m.size(), Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
      }
      for (auto& [p, t, seq] : seqOrder(ops)) {
        auto want = message(p, b.rank(), t, seq);
        std::vector<uint8_t> got(want.size());
        ASSERT_EQ(b.recv(p, t, got.data(), got.size(), Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
        ASSERT_EQ(got, want) << "from " << p << " tag " << t << " seq " << seq;
      }
      ASSERT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk) << threadLastError();
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, RecvOfTheWrongSizeIsAnInternalError) {
  runWithWatchdog(20, [] {
    auto results = runJob(newId(), allRanks(2), kJobSeconds, [&](Bootstrap& b) {
      int peer = 1 - b.rank();
      uint32_t v = 42;
      ASSERT_EQ(b.send(peer, 3, &v, sizeof(v), Deadline::afterSeconds(kJobSeconds)), kOk);
      uint64_t w = 0;
      EXPECT_EQ(b.recv(peer, 3, &w, sizeof(w), Deadline::afterSeconds(kJobSeconds)), Status::kInternalError);
      EXPECT_NE(threadLastError().find("4 bytes"), std::string::npos) << threadLastError();
      ASSERT_EQ(b.send(b.rank(), 9, nullptr, 0, Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(b.recv(b.rank(), 9, nullptr, 0, Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(b.send(2, 0, &v, sizeof(v), Deadline::afterSeconds(1)), Status::kInvalidArgument);
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, HostileConnectionsToTheRootDoNotDisturbTheJob) {
  runWithWatchdog(30, [] {
    UniqueIdData id = newId();
    SocketAddress root = rootOf(id);
    Socket wrongSecret, garbage;
    ASSERT_TRUE(Socket::connect(root, deadlineInMs(5000), nullptr, &wrongSecret).ok());
    ASSERT_TRUE(Socket::connect(root, deadlineInMs(5000), nullptr, &garbage).ok());
    wire::RegisterMsg m{};
    m.magic = wire::kMagic;
    m.version = wire::kVersion;
    m.secret[0] = id.secret[0] ^ 1;
    m.secret[1] = id.secret[1];
    m.rank = 0;
    m.nranks = 3;
    m.waitMs = 5000;
    ASSERT_TRUE(wrongSecret.sendAll(&m, sizeof(m), deadlineInMs(5000), nullptr).ok());
    std::vector<uint8_t> junk(1000, 0xAB);
    ASSERT_TRUE(garbage.sendAll(junk.data(), junk.size(), deadlineInMs(5000), nullptr).ok());
    // The root closes both without an answer.
    char byte;
    EXPECT_EQ(wrongSecret.recvAll(&byte, 1, deadlineInMs(5000), nullptr).code, IoCode::kClosed);
    EXPECT_EQ(garbage.recvAll(&byte, 1, deadlineInMs(5000), nullptr).code, IoCode::kClosed);

    auto results = runJob(id, allRanks(3), kJobSeconds, [](Bootstrap& b) {
      std::vector<int> v(3, -1);
      v[b.rank()] = b.rank() * 10;
      ASSERT_EQ(b.allGather(v.data(), sizeof(int), Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(v, (std::vector<int>{0, 10, 20}));
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, SilentConnectionToTheRootIsDropped) {
  runWithWatchdog(30, [] {
    UniqueIdData id = newId();
    Socket silent;
    ASSERT_TRUE(Socket::connect(rootOf(id), deadlineInMs(5000), nullptr, &silent).ok());
    auto t0 = Clock::now();
    char byte;
    EXPECT_EQ(silent.recvAll(&byte, 1, deadlineInMs(8000), nullptr).code, IoCode::kClosed);
    auto waited = Clock::now() - t0;
    EXPECT_GE(waited, std::chrono::milliseconds(wire::kHelloTimeoutMs - 500));
    EXPECT_LT(waited, std::chrono::milliseconds(wire::kHelloTimeoutMs + 2000));
    // The root still serves the job.
    auto results = runJob(id, allRanks(2), kJobSeconds,
                          [](Bootstrap& b) { EXPECT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk); });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, WrongSecretRankFailsWithASentence) {
  runWithWatchdog(20, [] {
    UniqueIdData id = newId();
    UniqueIdData forged = id;
    forged.secret[1] ^= 0x55;
    auto bad = runJob(forged, {{0, 1}}, 5);
    EXPECT_EQ(bad[0].status, Status::kRemoteError);
    EXPECT_NE(bad[0].error.find("secret"), std::string::npos) << bad[0].error;
    auto good = runJob(id, {{0, 1}}, kJobSeconds);
    EXPECT_EQ(good[0].status, kOk) << good[0].error;
  });
}

TEST_F(BootstrapTest, MismatchedNranksFailsEveryRankPromptly) {
  runWithWatchdog(20, [] {
    auto t0 = Clock::now();
    auto results = runJob(newId(), {{0, 2}, {1, 3}}, 8);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4)) << "should fail on the mismatch, not a timeout";
    for (auto& r : results) {
      EXPECT_EQ(r.status, Status::kInvalidUsage) << r.error;
      EXPECT_TRUE(r.error.find("says nranks=2") != std::string::npos ||
                  r.error.find("says nranks=3") != std::string::npos)
          << r.error;
    }
  });
}

// Ranks in the root's process compete with it for descriptors; when the root runs out it may have
// none left to answer them with, so they read its failure from the record it publishes.
TEST_F(BootstrapTest, RootPublishesItsFailureToRanksInItsProcess) {
  runWithWatchdog(20, [] {
    UniqueIdData id = newId();
    std::shared_ptr<const LocalRootFailure> record = watchLocalRoot(rootOf(id));
    ASSERT_NE(record, nullptr);
    EXPECT_FALSE(record->failed.load());
    runJob(id, {{0, 2}, {1, 3}}, 8);
    ASSERT_TRUE(record->failed.load());
    EXPECT_EQ(record->code, Status::kInvalidUsage);
    EXPECT_NE(record->sentence.find("every rank must pass the same nranks"), std::string::npos) << record->sentence;

    SocketAddress nobody;
    std::string why;
    ASSERT_TRUE(SocketAddress::parse("127.0.0.1:1", AF_INET, &nobody, &why)) << why;
    EXPECT_EQ(watchLocalRoot(nobody), nullptr);
  });
}

TEST_F(BootstrapTest, DuplicateRankFailsWithBothHosts) {
  runWithWatchdog(20, [] {
    auto t0 = Clock::now();
    auto results = runJob(newId(), {{1, 3}, {1, 3}, {0, 3}}, 8);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4));
    for (auto& r : results) {
      EXPECT_EQ(r.status, Status::kInvalidUsage) << r.error;
      EXPECT_NE(r.error.find("rank 1 registered twice"), std::string::npos) << r.error;
      EXPECT_NE(r.error.find("from host"), std::string::npos) << r.error;
    }
  });
}

TEST_F(BootstrapTest, MissingRankTimesOutNamingIt) {
  runWithWatchdog(20, [] {
    auto t0 = Clock::now();
    auto results = runJob(newId(), {{0, 4}, {3, 4}}, 2);
    auto took = Clock::now() - t0;
    EXPECT_LE(took, std::chrono::milliseconds(2300));
    for (auto& r : results) {
      EXPECT_EQ(r.status, Status::kTimeout) << r.error;
      EXPECT_NE(r.error.find("ranks 1,2 of 4 never joined"), std::string::npos) << r.error;
    }
  });
}

TEST_F(BootstrapTest, RootTimeoutNamesMissingRanks) {
  runWithWatchdog(20, [] {
    setenv("COLLCOMM_TIMEOUT", "1", 1);
    UniqueIdData id = newId();
    setenv("COLLCOMM_TIMEOUT", "15", 1);
    auto t0 = Clock::now();
    auto results = runJob(id, {{0, 3}}, kJobSeconds);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3)) << "the root's COLLCOMM_TIMEOUT, not the rank's deadline";
    EXPECT_EQ(results[0].status, Status::kTimeout) << results[0].error;
    EXPECT_NE(results[0].error.find("ranks 1,2 of 3 never joined"), std::string::npos) << results[0].error;
    EXPECT_NE(results[0].error.find("COLLCOMM_TIMEOUT=1"), std::string::npos) << results[0].error;
  });
}

TEST_F(BootstrapTest, AbortUnblocksRecvAndLaterCalls) {
  runWithWatchdog(20, [] {
    // Rank 0 hands over its bootstrap and thread just before its recv; the aborter aborts once that
    // thread sleeps in the recv's wait. Rank 1 stays in the job until rank 0 is done.
    std::promise<std::pair<Bootstrap*, pid_t>> victim;
    std::future<std::pair<Bootstrap*, pid_t>> victimReady = victim.get_future();
    std::promise<void> rank0Done;
    std::future<void> rank0Finished = rank0Done.get_future();
    std::atomic<Clock::rep> abortAt{0};
    const auto limit = std::chrono::seconds(static_cast<int>(kJobSeconds));
    std::thread aborter([&] {
      if (victimReady.wait_for(limit) != std::future_status::ready) {
        ADD_FAILURE() << "rank 0 never reached its recv";
        return;
      }
      auto [b, tid] = victimReady.get();
      EXPECT_TRUE(waitThreadAsleep(tid)) << "rank 0 did not block in its recv";
      abortAt.store(Clock::now().time_since_epoch().count());
      b->abort();
    });
    auto results = runJob(newId(), allRanks(2), kJobSeconds, [&](Bootstrap& b) {
      if (b.rank() == 1) {
        EXPECT_EQ(rank0Finished.wait_for(limit), std::future_status::ready) << "rank 0 did not finish";
        return;
      }
      uint8_t x = 0;
      victim.set_value({&b, currentTid()});
      EXPECT_EQ(b.recv(1, 5, &x, 1, Deadline::afterSeconds(kJobSeconds)), Status::kRemoteError);
      const auto returned = Clock::now();
      const Clock::time_point aborted{Clock::duration{abortAt.load()}};
      // The recv waited for the abort (it was in its wait when the abort came, not started after
      // it) and the abort ended it promptly.
      EXPECT_NE(threadLastError().find("aborted while"), std::string::npos) << threadLastError();
      EXPECT_GE(returned, aborted);
      EXPECT_LT(returned - aborted, std::chrono::seconds(1)) << "abort must unblock recv within 1 s";
      EXPECT_EQ(b.barrier(Deadline::afterSeconds(1)), Status::kRemoteError);
      EXPECT_EQ(b.send(1, 0, &x, 1, Deadline::afterSeconds(1)), Status::kRemoteError);
      EXPECT_NE(threadLastError().find("aborted"), std::string::npos) << threadLastError();
      rank0Done.set_value();
    });
    aborter.join();
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, DeadPeerIsARemoteErrorNamingIt) {
  runWithWatchdog(20, [] {
    std::atomic<bool> rank1Gone{false};
    auto results = runJob(newId(), allRanks(2), kJobSeconds, [&](Bootstrap& b) {
      uint32_t v = 7;
      if (b.rank() == 1) {
        ASSERT_EQ(b.send(0, 1, &v, sizeof(v), Deadline::afterSeconds(kJobSeconds)), kOk);
        return;  // runJob destroys rank 1's bootstrap: its sockets close
      }
      ASSERT_EQ(b.recv(1, 1, &v, sizeof(v), Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(v, 7u);
      auto t0 = Clock::now();
      EXPECT_EQ(b.recv(1, 1, &v, sizeof(v), Deadline::afterSeconds(kJobSeconds)), Status::kRemoteError);
      EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
      EXPECT_NE(threadLastError().find("rank 1 (host "), std::string::npos) << threadLastError();
      std::vector<uint32_t> slots(2, 0);
      EXPECT_EQ(b.allGather(slots.data(), sizeof(uint32_t), Deadline::afterSeconds(kJobSeconds)), Status::kRemoteError);
      EXPECT_NE(threadLastError().find("rank 1 (host "), std::string::npos) << threadLastError();
      EXPECT_NE(threadLastError().find("allgather"), std::string::npos) << threadLastError();
      EXPECT_NE(threadLastError().find("may have died"), std::string::npos) << threadLastError();
      rank1Gone = true;
    });
    EXPECT_TRUE(rank1Gone.load());
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, RecvTimeoutNamesThePeer) {
  runWithWatchdog(20, [] {
    auto results = runJob(newId(), allRanks(2), kJobSeconds, [&](Bootstrap& b) {
      if (b.rank() == 0) {
        uint8_t x;
        auto t0 = Clock::now();
        EXPECT_EQ(b.recv(1, 4, &x, 1, Deadline::afterSeconds(0.3)), Status::kTimeout);
        EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
        EXPECT_NE(threadLastError().find("from rank 1 (host "), std::string::npos) << threadLastError();
      }
      EXPECT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk);
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, SingleRankNeedsNoPeers) {
  runWithWatchdog(20, [] {
    auto results = runJob(newId(), {{0, 1}}, kJobSeconds, [](Bootstrap& b) {
      uint64_t v = 5, w = 0;
      EXPECT_EQ(b.allGather(&v, sizeof(v), Deadline::afterSeconds(1)), kOk);
      EXPECT_EQ(v, 5u);
      EXPECT_EQ(b.barrier(Deadline::afterSeconds(1)), kOk);
      EXPECT_EQ(b.send(0, 2, &v, sizeof(v), Deadline::afterSeconds(1)), kOk);
      EXPECT_EQ(b.recv(0, 2, &w, sizeof(w), Deadline::afterSeconds(1)), kOk);
      EXPECT_EQ(w, 5u);
    });
    EXPECT_EQ(results[0].status, kOk) << results[0].error;
  });
}

TEST_F(BootstrapTest, CommIdOnAFixedLocalAddress) {
  runWithWatchdog(30, [] {
    Socket probe;
    SocketAddress any, free;
    std::string why;
    ASSERT_TRUE(SocketAddress::parse("127.0.0.1:0", AF_INET, &any, &why));
    ASSERT_TRUE(Socket::listen(any, &probe, &free).ok());
    probe.close();
    std::string commId = free.toString();
    setenv("COLLCOMM_COMM_ID", commId.c_str(), 1);
    UniqueIdData a = newId(), b = newId();
    EXPECT_EQ(memcmp(&a, &b, sizeof(a)), 0) << "a fixed id is deterministic";
    EXPECT_TRUE(rootOf(a) == free);
    // No root runs until rank 0 starts one.
    Socket c;
    EXPECT_EQ(Socket::connect(free, deadlineInMs(100), nullptr, &c).code, IoCode::kTimeout);
    auto results = runJob(a, allRanks(3), kJobSeconds, [](Bootstrap& bs) {
      std::vector<int> v(3, -1);
      v[bs.rank()] = bs.rank() + 100;
      ASSERT_EQ(bs.allGather(v.data(), sizeof(int), Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(v, (std::vector<int>{100, 101, 102}));
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
    unsetenv("COLLCOMM_COMM_ID");
  });
}

TEST_F(BootstrapTest, Ipv6Job) {
  runWithWatchdog(30, [] {
    setenv("COLLCOMM_SOCKET_FAMILY", "AF_INET6", 1);
    std::vector<NetInterface> ifs;
    bool haveV6 = findInterfaces(1, &ifs) == kOk;
    UniqueIdData id{};
    bool made = haveV6 && createUniqueId(&id) == kOk;
    unsetenv("COLLCOMM_SOCKET_FAMILY");
    if (!made) GTEST_SKIP() << "no IPv6 interface here";
    EXPECT_EQ(rootOf(id).family(), AF_INET6);
    auto results = runJob(id, allRanks(3), kJobSeconds, [](Bootstrap& b) {
      std::vector<int> v(3, -1);
      v[b.rank()] = b.rank() + 7;
      ASSERT_EQ(b.allGather(v.data(), sizeof(int), Deadline::afterSeconds(kJobSeconds)), kOk);
      EXPECT_EQ(v, (std::vector<int>{7, 8, 9}));
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
  });
}

TEST_F(BootstrapTest, CommIdOnIpv6Loopback) {
  runWithWatchdog(30, [] {
    Socket probe;
    SocketAddress any, free;
    std::string why;
    if (!SocketAddress::parse("[::1]:0", AF_INET6, &any, &why) || !Socket::listen(any, &probe, &free).ok())
      GTEST_SKIP() << "no IPv6 loopback here";
    probe.close();
    setenv("COLLCOMM_COMM_ID", free.toString().c_str(), 1);
    UniqueIdData id = newId();
    auto results = runJob(id, allRanks(2), kJobSeconds, [](Bootstrap& b) {
      EXPECT_EQ(b.barrier(Deadline::afterSeconds(kJobSeconds)), kOk);
    });
    for (auto& r : results) EXPECT_EQ(r.status, kOk) << r.error;
    unsetenv("COLLCOMM_COMM_ID");
  });
}

TEST_F(BootstrapTest, UniqueIdEncoding) {
  runWithWatchdog(20, [] {
    UniqueIdData id = newId();
    ccUniqueId wire;
    encodeUniqueId(id, &wire);
    UniqueIdData back{};
    ASSERT_EQ(decodeUniqueId(wire, &back), kOk);
    EXPECT_EQ(memcmp(&id, &back, sizeof(id)), 0);
    memset(&wire, 0x5A, sizeof(wire));
    EXPECT_EQ(decodeUniqueId(wire, &back), Status::kInvalidArgument);
    EXPECT_NE(threadLastError().find("was it made by ccGetUniqueId"), std::string::npos);
    std::unique_ptr<Bootstrap> b;
    EXPECT_EQ(Bootstrap::init(id, 2, 2, Deadline::afterSeconds(1), &b), Status::kInvalidArgument);
    EXPECT_EQ(b, nullptr);
    // Let the id's root finish.
    auto results = runJob(id, {{0, 1}}, kJobSeconds);
    EXPECT_EQ(results[0].status, kOk) << results[0].error;
  });
}

}  // namespace
}  // namespace collcomm::detail
