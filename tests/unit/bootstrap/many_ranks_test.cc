// Many ranks in one process (issue 22): 256 thread ranks initialise, reduce exactly and are
// destroyed under the usual default descriptor limit (1024), and the descriptors a process holds
// grow at most linearly with its ranks, also once every pair of ranks has connected.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
    const auto t0 = std::chrono::steady_clock::now();
    {
      // Each rank holds a registration socket and the root one accepted socket until the table is
      // complete: 2 * 48 descriptors do not fit in 40 more than are open now.
      FdLimit limit(static_cast<rlim_t>(openFds() + 40));
      ASSERT_TRUE(limit.ok());
      std::vector<std::thread> threads;
      for (int r = 0; r < kRanks; ++r) {
        threads.emplace_back([&, r] {
          std::unique_ptr<Bootstrap> b;
          status[r] = Bootstrap::init(id, r, kRanks, Deadline::afterSeconds(10), &b);
          error[r] = threadLastError();
        });
      }
      for (auto& t : threads) t.join();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "a timeout, not a prompt failure";
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_NE(status[r], kOk) << "rank " << r;
      EXPECT_TRUE(error[r].find("Too many open files") != std::string::npos ||
                  error[r].find("RLIMIT_NOFILE") != std::string::npos)
          << "rank " << r << ": " << error[r];
    }
  });
}

// Runs ranks [first, first + count) of a job of nranks as threads of this process: allgathers,
// messages to every rank (most in other processes) and a barrier, all checked exactly. Returns ""
// or what went wrong.
std::string runLocalRanks(const collcomm::detail::UniqueIdData& id, int first, int count, int nranks) {
  using namespace collcomm::detail;
  std::vector<std::string> errors(count);
  std::vector<std::thread> threads;
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      const int rank = first + i;
      std::string& err = errors[i];
      const Deadline d = Deadline::afterSeconds(20);
      std::unique_ptr<Bootstrap> b;
      if (Bootstrap::init(id, rank, nranks, d, &b) != kOk) {
        err = "init: " + threadLastError();
        return;
      }
      for (size_t bytes : {size_t{4}, size_t{70000}}) {
        std::vector<uint8_t> v(bytes * nranks, 0);
        for (size_t k = 0; k < bytes; ++k) v[rank * bytes + k] = static_cast<uint8_t>(rank * 7 + k);
        if (b->allGather(v.data(), bytes, d) != kOk) {
          err = "allgather: " + threadLastError();
          return;
        }
        for (int r = 0; r < nranks && err.empty(); ++r)
          for (size_t k = 0; k < bytes && err.empty(); ++k)
            if (v[r * bytes + k] != static_cast<uint8_t>(r * 7 + k)) err = "allgather slot " + std::to_string(r);
      }
      for (int p = 0; p < nranks && err.empty(); ++p) {
        const int msg = rank * 1000 + p;
        if (b->send(p, 11, &msg, sizeof(msg), d) != kOk) err = "send: " + threadLastError();
      }
      for (int p = 0; p < nranks && err.empty(); ++p) {
        int msg = -1;
        if (b->recv(p, 11, &msg, sizeof(msg), d) != kOk)
          err = "recv: " + threadLastError();
        else if (msg != p * 1000 + rank)
          err = "message from rank " + std::to_string(p) + " is " + std::to_string(msg);
      }
      if (err.empty() && b->barrier(d) != kOk) err = "barrier: " + threadLastError();
    });
  }
  for (auto& t : threads) t.join();
  std::string all;
  for (int i = 0; i < count; ++i)
    if (!errors[i].empty()) all += "rank " + std::to_string(first + i) + ": " + errors[i] + "\n";
  return all;
}

// Three processes of three thread ranks each: local mailboxes, the leaders' ring of process blocks
// and one connection between each pair of processes, checked together.
TEST(ManyRanks, ThreadRanksInSeveralProcesses) {
  runWithWatchdog(60, [] {
    using namespace collcomm::detail;
    setenv("COLLCOMM_TIMEOUT", "15", 1);
    constexpr int kProcs = 3, kPerProc = 3, kRanks = kProcs * kPerProc;
    UniqueIdData id{};
    ASSERT_EQ(createUniqueId(&id), kOk) << threadLastError();
    std::vector<pid_t> children;
    for (int p = 1; p < kProcs; ++p) {
      fflush(nullptr);
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        const std::string err = runLocalRanks(id, p * kPerProc, kPerProc, kRanks);
        if (!err.empty()) fprintf(stderr, "process %d: %s", p, err.c_str());
        fflush(stderr);
        _exit(err.empty() ? 0 : 1);
      }
      children.push_back(pid);
    }
    EXPECT_EQ(runLocalRanks(id, 0, kPerProc, kRanks), "");
    for (pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    }
  });
}

}  // namespace
}  // namespace collcomm::test
