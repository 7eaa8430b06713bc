// The launch group's rendezvous (device/launch_group.h): one launch a round, by the last member to
// arrive, with every member's payload in member order; its status to every member; the deadline,
// abort and misuse. Members are threads here, as ranks sharing a GPU are.
#include "device/launch_group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

using test::Watchdog;
using Arrival = LaunchGroup::Arrival;

Status arriveOne(LaunchGroup& g, int member, const void* payload, const LaunchGroup::Launch& launch,
                 double seconds = 60) {
  const Arrival a{member, payload};
  return g.arrive(std::span<const Arrival>(&a, 1), launch, Deadline::afterSeconds(seconds));
}

// What a launch saw: for each round, the payloads' values and the thread that ran it.
struct LaunchLog {
  std::mutex mu;
  std::vector<std::vector<int>> rounds;
  std::vector<std::thread::id> launchers;
  LaunchGroup::Launch launch() {
    return [this](std::span<const void* const> payloads) {
      std::vector<int> seen;
      for (const void* p : payloads) seen.push_back(p == nullptr ? -1 : *static_cast<const int*>(p));
      std::lock_guard<std::mutex> lock(mu);
      rounds.push_back(seen);
      launchers.push_back(std::this_thread::get_id());
      return kOk;
    };
  }
};

TEST(LaunchGroup, EachRoundLaunchesOnceWithEveryMembersPayloadInMemberOrder) {
  Watchdog dog(60, "LaunchGroup.EachRoundLaunchesOnce");
  constexpr int kMembers = 4, kRounds = 300;
  LaunchGroup g({0, 1, 2, 3}, 0);
  LaunchLog log;
  // payload[m][r] = 1000 m + r: a launch that mixed rounds or members would see other values.
  std::vector<std::vector<int>> payload(kMembers, std::vector<int>(kRounds));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int m = 0; m < kMembers; ++m)
    threads.emplace_back([&, m] {
      for (int r = 0; r < kRounds; ++r) {
        payload[m][r] = 1000 * m + r;
        if (!isOk(arriveOne(g, m, &payload[m][r], log.launch()))) failures.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(g.roundsLaunched(), static_cast<uint64_t>(kRounds));
  ASSERT_EQ(log.rounds.size(), static_cast<size_t>(kRounds));
  for (int r = 0; r < kRounds; ++r)
    EXPECT_EQ(log.rounds[r], (std::vector<int>{r, 1000 + r, 2000 + r, 3000 + r})) << "round " << r;
  EXPECT_EQ(g.arrivedThisRound(), 0);
}

TEST(LaunchGroup, OneThreadDrivingEveryMemberLaunchesAtOnce) {
  LaunchGroup g({4, 5, 6}, 1);
  LaunchLog log;
  int values[3] = {7, 8, 9};
  const Arrival all[3] = {{2, &values[2]}, {0, &values[0]}, {1, &values[1]}};
  ASSERT_TRUE(isOk(g.arrive(all, log.launch(), Deadline::afterSeconds(60))));
  ASSERT_EQ(log.rounds.size(), 1u);
  EXPECT_EQ(log.rounds[0], (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(log.launchers[0], std::this_thread::get_id());
}

TEST(LaunchGroup, AThreadDrivingTwoMembersJoinsOneDrivingTheThird) {
  Watchdog dog(60, "LaunchGroup.AThreadDrivingTwoMembersJoinsOneDrivingTheThird");
  constexpr int kRounds = 100;
  LaunchGroup g({0, 1, 2}, 0);
  LaunchLog log;
  std::vector<int> a(kRounds), b(kRounds), c(kRounds);
  std::atomic<int> failures{0};
  std::thread pair([&] {
    for (int r = 0; r < kRounds; ++r) {
      a[r] = r;
      b[r] = 100 + r;
      const Arrival both[2] = {{0, &a[r]}, {1, &b[r]}};
      if (!isOk(g.arrive(both, log.launch(), Deadline::afterSeconds(60)))) failures.fetch_add(1);
    }
  });
  for (int r = 0; r < kRounds; ++r) {
    c[r] = 200 + r;
    if (!isOk(arriveOne(g, 2, &c[r], log.launch()))) failures.fetch_add(1);
  }
  pair.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(log.rounds.size(), static_cast<size_t>(kRounds));
  for (int r = 0; r < kRounds; ++r) EXPECT_EQ(log.rounds[r], (std::vector<int>{r, 100 + r, 200 + r}));
}

TEST(LaunchGroup, AFailedLaunchReachesEveryMemberWithItsSentenceAndTheNextRoundRuns) {
  Watchdog dog(60, "LaunchGroup.AFailedLaunchReachesEveryMember");
  LaunchGroup g({0, 1, 2}, 0);
  std::atomic<int> launches{0};
  const LaunchGroup::Launch launch = [&](std::span<const void* const>) {
    return launches.fetch_add(1) == 0 ? CC_ERROR(Status::kCudaError, "the fused kernel was refused by CUDA (test)")
                                      : kOk;
  };
  for (int round = 0; round < 2; ++round) {
    std::vector<Status> got(3, kOk);
    std::vector<std::string> said(3);
    std::vector<std::thread> threads;
    for (int m = 0; m < 3; ++m)
      threads.emplace_back([&, m] {
        clearThreadLastError();
        got[m] = arriveOne(g, m, nullptr, launch);
        said[m] = threadLastError();
      });
    for (auto& t : threads) t.join();
    for (int m = 0; m < 3; ++m) {
      if (round == 0) {
        EXPECT_EQ(got[m], Status::kCudaError) << "member " << m;
        EXPECT_NE(said[m].find("refused by CUDA (test)"), std::string::npos) << said[m];
      } else {
        EXPECT_EQ(got[m], kOk) << "member " << m << ": " << said[m];
      }
    }
  }
  EXPECT_EQ(launches.load(), 2);
}

TEST(LaunchGroup, MembersThatNeverArriveAreNamedAtTheDeadlineAndNothingLaunches) {
  Watchdog dog(60, "LaunchGroup.MembersThatNeverArriveAreNamed");
  LaunchGroup g({3, 5, 7}, 2);
  LaunchLog log;
  std::vector<Status> got(2, kOk);
  std::vector<std::string> said(2);
  std::vector<std::thread> threads;
  for (int m = 0; m < 2; ++m)
    threads.emplace_back([&, m] {
      got[m] = arriveOne(g, m, nullptr, log.launch(), 0.3);
      said[m] = threadLastError();
    });
  for (auto& t : threads) t.join();
  for (int m = 0; m < 2; ++m) {
    EXPECT_EQ(got[m], Status::kTimeout);
    EXPECT_NE(said[m].find("for rank(s) 7, which share CUDA device 2"), std::string::npos) << said[m];
    EXPECT_EQ(said[m].find("ccGroupStart"), std::string::npos) << said[m];
  }
  // The late member finds the group stopped, at once and with the reason: its operation would
  // otherwise pair with the others' next ones.
  EXPECT_EQ(arriveOne(g, 2, nullptr, log.launch(), 60), Status::kTimeout);
  EXPECT_NE(threadLastError().find("stopped launching together"), std::string::npos) << threadLastError();
  EXPECT_NE(threadLastError().find("for rank(s) 7"), std::string::npos) << threadLastError();
  EXPECT_TRUE(log.rounds.empty());
  EXPECT_EQ(g.roundsLaunched(), 0u);
}

TEST(LaunchGroup, AThreadWaitingForAMemberItLastDroveIsToldToUseAGroup) {
  LaunchGroup g({0, 1}, 0);
  LaunchLog log;
  const Arrival both[2] = {{0, nullptr}, {1, nullptr}};
  ASSERT_TRUE(isOk(g.arrive(both, log.launch(), Deadline::afterSeconds(60))));
  // The same thread now calls member 0's next operation alone: it would wait for itself.
  EXPECT_EQ(arriveOne(g, 0, nullptr, log.launch(), 0.1), Status::kTimeout);
  EXPECT_NE(threadLastError().find("rank 1's last operation came from this thread"), std::string::npos)
      << threadLastError();
  EXPECT_NE(threadLastError().find("ccGroupStart and ccGroupEnd"), std::string::npos) << threadLastError();
}

TEST(LaunchGroup, AbortWakesAWaitingMemberAndStopsLaterRounds) {
  Watchdog dog(60, "LaunchGroup.AbortWakesAWaitingMember");
  LaunchGroup g({0, 1}, 0);
  LaunchLog log;
  Status got = kOk;
  std::string said;
  std::thread waiter([&] {
    got = arriveOne(g, 0, nullptr, log.launch(), 3600);
    said = threadLastError();
  });
  while (g.arrivedThisRound() == 0) std::this_thread::yield();  // member 0 waits now
  g.abort(1);
  waiter.join();
  EXPECT_EQ(got, Status::kRemoteError);
  EXPECT_NE(said.find("rank 1's communicator was aborted"), std::string::npos) << said;
  EXPECT_EQ(arriveOne(g, 1, nullptr, log.launch()), Status::kRemoteError);
  EXPECT_TRUE(log.rounds.empty());
}

TEST(LaunchGroup, MisuseIsRefusedWithNothingJoined) {
  LaunchGroup g({0, 1}, 0);
  LaunchLog log;
  EXPECT_EQ(arriveOne(g, 2, nullptr, log.launch()), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("member 2 of the launch group on CUDA device 0 does not exist"), std::string::npos)
      << threadLastError();
  const Arrival twice[2] = {{1, nullptr}, {1, nullptr}};
  EXPECT_EQ(g.arrive(twice, log.launch(), Deadline::afterSeconds(60)), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("rank 1 called a second operation"), std::string::npos) << threadLastError();
  EXPECT_EQ(g.arrive({}, log.launch(), Deadline::afterSeconds(60)), Status::kInvalidUsage);
  EXPECT_EQ(g.arrivedThisRound(), 0);
  // The group still works.
  const Arrival both[2] = {{0, nullptr}, {1, nullptr}};
  EXPECT_TRUE(isOk(g.arrive(both, log.launch(), Deadline::afterSeconds(60))));
  EXPECT_EQ(log.rounds.size(), 1u);
}

TEST(LaunchGroup, AMemberArrivingTwiceWhileItsRoundGathersIsRefused) {
  Watchdog dog(60, "LaunchGroup.AMemberArrivingTwiceWhileItsRoundGathersIsRefused");
  LaunchGroup g({0, 1}, 0);
  LaunchLog log;
  Status first = Status::kInternalError;
  std::thread waiter([&] { first = arriveOne(g, 0, nullptr, log.launch()); });
  while (g.arrivedThisRound() == 0) std::this_thread::yield();
  EXPECT_EQ(arriveOne(g, 0, nullptr, log.launch()), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("one thread at a time"), std::string::npos) << threadLastError();
  EXPECT_TRUE(isOk(arriveOne(g, 1, nullptr, log.launch())));
  waiter.join();
  EXPECT_TRUE(isOk(first));
  EXPECT_EQ(log.rounds.size(), 1u);
}

TEST(LaunchGroup, JoinGivesOneGroupPerCommunicatorAndDevice) {
  std::shared_ptr<LaunchGroup> a, b, other, mismatch;
  ASSERT_TRUE(isOk(joinLaunchGroup(42, 0, {0, 1}, &a)));
  ASSERT_TRUE(isOk(joinLaunchGroup(42, 0, {0, 1}, &b)));
  EXPECT_EQ(a.get(), b.get());
  ASSERT_TRUE(isOk(joinLaunchGroup(42, 1, {2, 3}, &other)));
  EXPECT_NE(other.get(), a.get());
  EXPECT_EQ(joinLaunchGroup(42, 0, {0, 2}, &mismatch), Status::kInvalidUsage);
  EXPECT_EQ(mismatch, nullptr);
  EXPECT_NE(threadLastError().find("disagree on who shares it: ranks 0, 2 against 0, 1"), std::string::npos)
      << threadLastError();
  // Once its members let go, the id and device make a new group.
  a.reset();
  b.reset();
  std::shared_ptr<LaunchGroup> again;
  ASSERT_TRUE(isOk(joinLaunchGroup(42, 0, {0, 2}, &again)));
  EXPECT_EQ(again->ranks(), (std::vector<int>{0, 2}));
}

}  // namespace
}  // namespace collcomm::detail
