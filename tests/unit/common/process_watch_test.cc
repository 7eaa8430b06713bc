// ProcessWatch (common/process_watch.h): each process that exits is reported once, by rank; live ones
// never are; the watch stops at once when destroyed. The processes are children of the test,
// each blocked on a pipe until the test closes it.
#include "common/process_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>

#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

// A child that exits when the returned pipe's write end (*release) is closed.
pid_t blockedChild(int* release) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    char c;
    (void)!read(fds[0], &c, 1);
    _exit(0);
  }
  close(fds[0]);
  *release = fds[1];
  return pid;
}

TEST(ProcessAlive, SelfLivesAndAnExitedChildDoesNot) {
  test::Watchdog dog(60, "ProcessAlive");
  EXPECT_TRUE(processAlive(getpid()));
  int release = -1;
  const pid_t child = blockedChild(&release);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(processAlive(child));
  close(release);
  // Waits for its exit without reaping it: a zombie counts as exited.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(processAlive(child));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_FALSE(processAlive(child));
}

TEST(ProcessWatch, ReportsEachProcessThatExitsOnceByRank) {
  test::Watchdog dog(60, "ProcessWatch");
  int releaseA = -1, releaseB = -1;
  const pid_t a = blockedChild(&releaseA);
  const pid_t b = blockedChild(&releaseB);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  std::promise<int> firstExit, secondExit;
  std::atomic<int> calls{0};
  {
    ProcessWatch watch({{3, getpid()}, {5, a}, {7, b}}, std::chrono::milliseconds(10), [&](int rank) {
      const int call = calls.fetch_add(1);
      if (call == 0) firstExit.set_value(rank);
      if (call == 1) secondExit.set_value(rank);
    });
    close(releaseB);
    std::future<int> first = firstExit.get_future();
    ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_EQ(first.get(), 7);
    close(releaseA);  // the watch goes on looking at the others
    std::future<int> second = secondExit.get_future();
    ASSERT_EQ(second.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    EXPECT_EQ(second.get(), 5);
  }
  EXPECT_EQ(calls.load(), 2);  // each once; this process (rank 3) never
  int status = 0;
  EXPECT_EQ(waitpid(a, &status, 0), a);
  EXPECT_EQ(waitpid(b, &status, 0), b);
}

TEST(ProcessWatch, StopsAtOnceWhenDestroyedAndNeverReportsTheLiving) {
  test::Watchdog dog(60, "ProcessWatch");
  std::atomic<int> calls{0};
  const auto t0 = std::chrono::steady_clock::now();
  {
    // A period far longer than the test: destruction must not wait for it.
    ProcessWatch watch({{0, getpid()}}, std::chrono::hours(1), [&](int) { calls.fetch_add(1); });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace collcomm::detail
