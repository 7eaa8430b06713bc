// The driver checks itself: its leftover check finds segments, hung workers are killed at the
// deadline, a worker given a bad id fails with a FAIL line.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "mp/worker_job.h"

namespace collcomm::test {
namespace {

// The leftover check is not vacuous: it finds a segment named the way the SHM transport names them.
TEST(ProcessDriver, LeftoverCheckFindsSegments) {
  const std::string name = "/collcomm-" + std::to_string(getpid()) + "-0-r0-from1";
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << strerror(errno);
  close(fd);
  const std::vector<std::string> found = shmSegmentsOf(getpid());
  shm_unlink(name.c_str());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ("/" + found[0], name);
  EXPECT_TRUE(shmSegmentsOf(getpid()).empty());
}

// The driver's own deadline: hung workers are killed and the test is told why.
TEST(ProcessDriver, HungWorkersAreKilledAtTheDeadline) {
  WorkerJob job("hang", 2, {}, 2, /*workerWatchdogSeconds=*/60);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = job.run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(err.rfind("WATCHDOG: the hang job did not finish within 2 s; killed ranks 0 1", 0), 0u) << err;
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(WIFSIGNALED(job.result(r).status) && WTERMSIG(job.result(r).status) == SIGKILL)
        << describeStatus(job.result(r).status);
  EXPECT_LT(seconds, 4.0);
}

// The driver itself checks its failure reporting: a worker given a bad id fails with a FAIL line.
TEST(ProcessDriver, BadUniqueIdFailsWithMessage) {
  char logPath[] = "/tmp/cc_mp_worker_XXXXXX";
  int fd = mkstemp(logPath);
  ASSERT_GE(fd, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fd);
  std::string a0 = CC_MP_WORKER_PATH, a1 = "--scenario=sweep", a2 = "--nranks=2", a3 = "--rank=0",
              a4 = "--id=" + std::string(256, '0'), a5 = "--watchdog=30";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data(), nullptr};
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, CC_MP_WORKER_PATH, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string out = readFile(logPath);
  unlink(logPath);
  EXPECT_TRUE(exitedWith(status, 1)) << describeStatus(status) << "\n" << out;
  EXPECT_NE(out.find("FAIL rank 0 [sweep]: ccCommInitRank returned"), std::string::npos) << out;
}

}  // namespace
}  // namespace collcomm::test
