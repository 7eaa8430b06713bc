// Many ranks in one process (issue 22): 256 thread ranks initialise, reduce exactly and are
// destroyed under the usual default descriptor limit (1024), and the descriptors a process holds
// grow at most linearly with its ranks, also once every pair of ranks has connected.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "support/coll_check.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

// Descriptors this process holds now.
int openFds() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n - 3;  // ".", ".." and the directory's own descriptor
}

// Lowers the soft RLIMIT_NOFILE for its scope (the limit most systems start processes with).
class FdLimit {
 public:
  explicit FdLimit(rlim_t soft) {
    getrlimit(RLIMIT_NOFILE, &old_);
    rlimit lowered = old_;
    lowered.rlim_cur = std::min(soft, old_.rlim_max);
    ok_ = setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~FdLimit() { setrlimit(RLIMIT_NOFILE, &old_); }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  bool ok_ = false;
};

// One AllReduce on every rank, checked exactly.
void allReduceOnce(ThreadRanks& ranks) {
  const CaseSpec c{Coll::kAllReduce, ccInt32, ccSum, 1001, false, 0};
  ranks.run([&](int r, ccComm_t comm) {
    std::string f = runCase(comm, r, ranks.size(), c);
    if (!f.empty()) ranks.fail(f);
  });
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(ManyRanks, TwoHundredFiftySixThreadRanksUnderTheDefaultFdLimit) {
  runWithWatchdog(120, [] {
    FdLimit limit(1024);
    ASSERT_TRUE(limit.ok());
    const auto t0 = std::chrono::steady_clock::now();
    {
      ThreadRanks ranks(256);
      ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
      printf("init of 256 thread ranks: %.0f ms, %d descriptors open\n", msSince(t0), openFds());
      allReduceOnce(ranks);
      ASSERT_TRUE(ranks.ok()) << ranks.failures();
    }
    printf("init, AllReduce and destroy of 256 thread ranks: %.0f ms\n", msSince(t0));
  });
}

// After init, and after a OneShot AllReduce (which connects every pair of ranks), the descriptors
// of n thread ranks grow at most by n: measured at 8 and 32 ranks.
TEST(ManyRanks, DescriptorsGrowAtMostLinearly) {
  runWithWatchdog(60, [] {
    setenv("COLLCOMM_ALGO", "OneShot", 1);
    for (int n : {8, 32}) {
      SCOPED_TRACE("nranks=" + std::to_string(n));
      const int before = openFds();
      ThreadRanks ranks(n);
      ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
      const int afterInit = openFds();
      allReduceOnce(ranks);
      ASSERT_TRUE(ranks.ok()) << ranks.failures();
      const int afterAllPairs = openFds();
      printf("%d thread ranks: %d descriptors before, %d after init, %d after every pair connected\n", n, before,
             afterInit, afterAllPairs);
      EXPECT_LE(afterInit - before, n);
      EXPECT_LE(afterAllPairs - before, n);
    }
    unsetenv("COLLCOMM_ALGO");
  });
}

// Running out of descriptors at init is a prompt error with a sentence on every rank, not a hang
// until the deadline (the root's listener stays readable when accept fails with EMFILE).
TEST(ManyRanks, TooFewDescriptorsFailEveryRankPromptly) {
  runWithWatchdog(60, [] {
    using namespace collcomm::detail;
    setenv("COLLCOMM_TIMEOUT", "15", 1);
    constexpr int kRanks = 48;
    UniqueIdData id{};
    ASSERT_EQ(createUniqueId(&id), kOk) << threadLastError();
    std::vector<Status> status(kRanks, kOk);
    std::vector<std::string> error(kRanks);
    // Descriptors run out only while every thread is inside Bootstrap::init: UBSan checks the
    // virtual calls that start and end a std::thread, and that check needs a descriptor of its own
    // (it probes memory through a pipe), so it would call a valid object invalid once none is left.
    std::latch started(kRanks), finished(kRanks);
    std::promise<void> go, leave;
    std::shared_future<void> goSignal = go.get_future().share(), leaveSignal = leave.get_future().share();
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        started.count_down();
        goSignal.wait();
        {
          std::unique_ptr<Bootstrap> b;
          status[r] = Bootstrap::init(id, r, kRanks, Deadline::afterSeconds(10), &b);
          error[r] = threadLastError();
        }
        finished.count_down();
        leaveSignal.wait();
      });
    }
    started.wait();
    const auto t0 = std::chrono::steady_clock::now();
    bool lowered = false;
    {
      // Each rank holds a registration socket and the root one accepted socket until the table is
      // complete: 2 * 48 descriptors do not fit in 40 more than are open now.
      FdLimit limit(static_cast<rlim_t>(openFds() + 40));
      lowered = limit.ok();
      go.set_value();
      finished.wait();
    }
    leave.set_value();
    for (auto& t : threads) t.join();
    ASSERT_TRUE(lowered);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "a timeout, not a prompt failure";
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_NE(status[r], kOk) << "rank " << r;
      EXPECT_TRUE(error[r].find("Too many open files") != std::string::npos ||
                  error[r].find("RLIMIT_NOFILE") != std::string::npos)
          << "rank " << r << ": " << error[r];
    }
  });
}

}  // namespace
}  // namespace collcomm::test
