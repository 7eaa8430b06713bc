// ccLaunchShareId between real processes: three ranks (this binary again, rank_child.h) started
// with each launcher's variables agree on one id through the id file and form a communicator;
// a stale file from another job is never taken; a rank whose rank 0 never comes gives up in time.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collcomm.h"
#include "rank_child.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

constexpr int kRanks = 3;

// A job key no earlier run used: this process and a counter.
std::string uniqueJobId() {
  static int n = 0;
  return std::to_string(getpid()) + std::to_string(1000 + ++n);
}

// The variables a launcher would give rank r of a kRanks job, with a fresh job id.
using RankEnv = std::vector<std::string> (*)(int rank, const std::string& job);

std::vector<std::string> openMpiEnv(int r, const std::string& job) {
  return {"OMPI_COMM_WORLD_RANK=" + std::to_string(r), "OMPI_COMM_WORLD_SIZE=3",
          "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r), "OMPI_MCA_ess_base_jobid=" + job,
          "OMPI_MCA_orte_precondition_transports=" + job + "-nonce"};
}
std::vector<std::string> pmiEnv(int r, const std::string& job) {
  return {"PMI_RANK=" + std::to_string(r), "PMI_SIZE=3", "MPI_LOCALRANKID=" + std::to_string(r), "PMI_JOBID=" + job};
}
std::vector<std::string> slurmEnv(int r, const std::string& job) {
  return {"SLURM_PROCID=" + std::to_string(r), "SLURM_STEP_NUM_TASKS=3", "SLURM_LOCALID=" + std::to_string(r),
          "SLURM_JOB_ID=" + job, "SLURM_STEP_ID=0"};
}

std::vector<std::string> childEnv(const std::vector<std::string>& launcherVars,
                                  const std::vector<std::string>& more = {}) {
  std::vector<std::string> env = cleanEnvironment({"CC_LAUNCH_TEST_CHILD=1", "COLLCOMM_TIMEOUT=30"});
  env.insert(env.end(), launcherVars.begin(), launcherVars.end());
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

// The "id <hex>" line a child printed ("" if none).
std::string idLine(const std::string& out) {
  const size_t at = out.find("id ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

// Starts kRanks ranks (rank 0 after rank0DelayMs, so readers poll first) and checks that they
// agree on one id and form a working communicator. Returns the id line. The delay is deliberate,
// not a synchronisation: the ranks agree however they are scheduled (a reader that starts after
// rank 0 finds the id at once), it only makes the readers' polling path likely to be exercised.
std::string runJob(RankEnv makeEnv, const std::string& job, const std::vector<std::string>& more,
                   int rank0DelayMs = 0) {
  std::vector<std::unique_ptr<Command>> ranks(kRanks);
  for (int r = kRanks - 1; r >= 0; --r) {
    if (r == 0 && rank0DelayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(rank0DelayMs));
    ranks[r] = std::make_unique<Command>(childArgv(), childEnv(makeEnv(r, job), more));
  }
  std::set<std::string> ids;
  for (int r = 0; r < kRanks; ++r) {
    CommandResult res = ranks[r]->wait(60);
    EXPECT_FALSE(res.timedOut) << "rank " << r;
    EXPECT_EQ(res.exitCode(), 0) << "rank " << r << " stdout:\n" << res.out << "stderr:\n" << res.err;
    EXPECT_NE(res.out.find("sum 6"), std::string::npos) << res.out;
    ids.insert(idLine(res.out));
  }
  EXPECT_EQ(ids.size(), 1u) << "the ranks did not agree on one id";
  return *ids.begin();
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A COLLCOMM_ID_FILE path in a fresh directory, removed (when empty, as rank 0 leaves it) after.
class TempIdFile {
 public:
  TempIdFile() {
    if (mkdtemp(dir_) != nullptr) path_ = std::string(dir_) + "/job.id";
  }
  ~TempIdFile() { rmdir(dir_); }
  const std::string& path() const { return path_; }  // "" when the directory could not be made

 private:
  char dir_[32] = "/tmp/cc_launch_test_XXXXXX";
  std::string path_;
};

TEST(LaunchIdShare, OpenMpiRanksShareThroughTmp) {
  Watchdog watchdog(120, "LaunchIdShare.OpenMpiRanksShareThroughTmp");
  const std::string job = uniqueJobId();
  runJob(openMpiEnv, job, {}, 200);
  EXPECT_FALSE(exists("/tmp/collcomm-openmpi-" + job + ".id")) << "rank 0 left its id file behind";
}

TEST(LaunchIdShare, PmiRanksShare) {
  Watchdog watchdog(120, "LaunchIdShare.PmiRanksShare");
  runJob(pmiEnv, uniqueJobId(), {});
}

TEST(LaunchIdShare, SlurmRanksShareThroughIdFile) {
  Watchdog watchdog(120, "LaunchIdShare.SlurmRanksShareThroughIdFile");
  TempIdFile file;
  ASSERT_NE(file.path(), "");
  runJob(slurmEnv, uniqueJobId(), {"COLLCOMM_ID_FILE=" + file.path()});
  EXPECT_FALSE(exists(file.path()));
}

// A file left by a killed job with the same path (and even the same job key) is not taken: the
// readers wait for rank 0's line, and all agree on it.
TEST(LaunchIdShare, StaleFileIsIgnored) {
  Watchdog watchdog(120, "LaunchIdShare.StaleFileIsIgnored");
  TempIdFile file;
  ASSERT_NE(file.path(), "");
  const std::string& path = file.path();
  const std::string job = uniqueJobId();
  const std::string staleHex(2 * CC_UNIQUE_ID_BYTES, 'a');
  {
    std::ofstream stale(path);  // same job id, another job's nonce (a reused job id)
    stale << "collcomm-id 1 openmpi-" << job << "/old-nonce/1 " << staleHex << "\n";
  }
  const std::string id = runJob(openMpiEnv, job, {"COLLCOMM_ID_FILE=" + path}, 500);
  EXPECT_NE(id, "id " + staleHex);
}

TEST(LaunchIdShare, ReaderWithoutRankZeroGivesUp) {
  Watchdog watchdog(60, "LaunchIdShare.ReaderWithoutRankZeroGivesUp");
  const std::string job = uniqueJobId();
  CommandResult res =
      runCommand(childArgv(), childEnv(openMpiEnv(1, job), {"CC_LAUNCH_TEST_TIMEOUT=1", "CC_LAUNCH_TEST_INIT=0"}), 30);
  EXPECT_EQ(res.exitCode(), kChildShareFailed + ccTimeout) << res.err;
  EXPECT_LT(res.seconds, 10);
  EXPECT_NE(res.err.find("/tmp/collcomm-openmpi-" + job + ".id"), std::string::npos) << res.err;
  EXPECT_NE(res.err.find("rank 1 waited 1 s for rank 0"), std::string::npos) << res.err;
}

// ccLaunchCommInit: the three ranks of a Slurm step join in one call each.
TEST(LaunchCommInit, SlurmRanksJoinInOneCall) {
  Watchdog watchdog(120, "LaunchCommInit.SlurmRanksJoinInOneCall");
  TempIdFile file;
  ASSERT_NE(file.path(), "");
  const std::string job = uniqueJobId();
  std::vector<std::unique_ptr<Command>> ranks(kRanks);
  for (int r = 0; r < kRanks; ++r)
    ranks[r] = std::make_unique<Command>(
        childArgv(), childEnv(slurmEnv(r, job), {"CC_LAUNCH_TEST_INIT=launch", "COLLCOMM_ID_FILE=" + file.path()}));
  for (int r = 0; r < kRanks; ++r) {
    CommandResult res = ranks[r]->wait(60);
    EXPECT_EQ(res.exitCode(), 0) << "rank " << r << " stdout:\n" << res.out << "stderr:\n" << res.err;
    EXPECT_NE(res.out.find("rank " + std::to_string(r) + " of 3 via slurm (launched 1)\nsum 6"), std::string::npos)
        << res.out;
  }
}

// Started without a launcher, a program is a job of one (like an MPI singleton).
TEST(LaunchCommInit, AloneIsAJobOfOne) {
  Watchdog watchdog(60, "LaunchCommInit.AloneIsAJobOfOne");
  CommandResult res = runCommand(childArgv(), childEnv({}, {"CC_LAUNCH_TEST_INIT=launch"}), 30);
  EXPECT_EQ(res.exitCode(), 0) << res.err;
  EXPECT_NE(res.out.find("rank 0 of 1 via none (launched 0)\nsum 1"), std::string::npos) << res.out;
}

// Inconsistent launcher variables fail the call with a sentence, before any communicator exists.
TEST(LaunchCommInit, InconsistentLauncherVariablesAreRefused) {
  Watchdog watchdog(60, "LaunchCommInit.InconsistentLauncherVariablesAreRefused");
  CommandResult res = runCommand(
      childArgv(), childEnv({"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=3"}, {"CC_LAUNCH_TEST_INIT=launch"}), 30);
  EXPECT_EQ(res.exitCode(), kChildShareFailed + ccInvalidUsage) << res.err;
  EXPECT_NE(res.err.find("OMPI_COMM_WORLD_RANK=3 is not a rank of a job of OMPI_COMM_WORLD_SIZE=3"), std::string::npos)
      << res.err;
}

}  // namespace
}  // namespace collcomm::test
