// launch_env: launcher detection from each launcher's variables (set in this process), id
// encoding, and where each launcher's job publishes its id.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "collcomm_launch.h"

namespace collcomm::test {
namespace {

// Every variable launch_env reads. ScopedEnv clears them all for a test and restores them after,
// so these tests pass under any launcher and leave the process as they found it.
const char* const kVariables[] = {"CCRUN_RANK",
                                  "CCRUN_SIZE",
                                  "CCRUN_LOCAL_RANK",
                                  "CCRUN_LOCAL_SIZE",
                                  "CCRUN_UNIQUE_ID",
                                  "OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_SIZE",
                                  "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "OMPI_MCA_ess_base_jobid",
                                  "OMPI_MCA_orte_ess_jobid",
                                  "OMPI_MCA_orte_precondition_transports",
                                  "PMIX_NAMESPACE",
                                  "PMI_RANK",
                                  "PMI_SIZE",
                                  "PMI_FD",
                                  "PMI_JOBID",
                                  "MPI_LOCALRANKID",
                                  "SLURM_PROCID",
                                  "SLURM_NTASKS",
                                  "SLURM_STEP_NUM_TASKS",
                                  "SLURM_LOCALID",
                                  "SLURM_JOB_ID",
                                  "SLURM_JOBID",
                                  "SLURM_STEP_ID",
                                  "SLURM_STEPID",
                                  "COLLCOMM_ID_FILE",
                                  "COLLCOMM_COMM_ID"};

class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* v : kVariables) {
      if (const char* old = getenv(v)) saved_[v] = old;
      unsetenv(v);
    }
  }
  ~ScopedEnv() {
    for (const char* v : kVariables) unsetenv(v);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  void set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  std::map<std::string, std::string> saved_;
};

ccLaunchInfo detect(ccResult_t expect = ccSuccess) {
  ccLaunchInfo info{-7, -7, -7, -7, "untouched"};
  EXPECT_EQ(ccLaunchDetect(&info), expect);
  return info;
}

std::string idFile(const ccLaunchInfo& info) {
  char path[4096];
  return ccLaunchIdFilePath(&info, path, sizeof(path)) == 0 ? path : "(none)";
}

TEST(LaunchEnv, NoLauncherMeansOneProcess) {
  ScopedEnv env;
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 0);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
  EXPECT_STREQ(info.launcher, "none");
  EXPECT_EQ(idFile(info), "(none)");
}

TEST(LaunchEnv, Ccrun) {
  ScopedEnv env;
  env.set("CCRUN_RANK", "2");
  env.set("CCRUN_SIZE", "4");
  env.set("CCRUN_LOCAL_RANK", "2");
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 1);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.localRank, 2);
  EXPECT_STREQ(info.launcher, "ccrun");
  EXPECT_EQ(idFile(info), "(none)");  // ccrun passes the id itself
}

TEST(LaunchEnv, OpenMpi) {
  ScopedEnv env;  // as Open MPI 4.1's mpirun sets them
  env.set("OMPI_COMM_WORLD_RANK", "1");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  env.set("OMPI_MCA_ess_base_jobid", "31653889");
  env.set("PMIX_NAMESPACE", "31653889");
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 1);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 2);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_STREQ(info.launcher, "openmpi");
  EXPECT_EQ(idFile(info), "/tmp/collcomm-openmpi-31653889.id");
  unsetenv("OMPI_MCA_ess_base_jobid");  // Open MPI 5 (PRRTE): only the PMIx namespace
  env.set("PMIX_NAMESPACE", "prterun-host-123@1");
  EXPECT_EQ(idFile(info), "/tmp/collcomm-openmpi-prterun-host-123_1.id");
  unsetenv("PMIX_NAMESPACE");  // Open MPI before 4: the orte variable
  env.set("OMPI_MCA_orte_ess_jobid", "777");
  EXPECT_EQ(idFile(info), "/tmp/collcomm-openmpi-777.id");
  unsetenv("OMPI_MCA_orte_ess_jobid");
  EXPECT_EQ(idFile(info), "(none)");
  ccUniqueId id;
  EXPECT_EQ(ccLaunchShareId(&info, &id, 1), ccInvalidUsage);  // cannot name the job: says what to set
}

TEST(LaunchEnv, PmiHydra) {
  ScopedEnv env;  // as MPICH 4.0's hydra sets them
  env.set("PMI_RANK", "0");
  env.set("PMI_SIZE", "3");
  env.set("MPI_LOCALRANKID", "0");
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 1);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 3);
  EXPECT_EQ(info.localRank, 0);
  EXPECT_STREQ(info.launcher, "pmi");
  // No PMI_FD here: the job is named after the parent process (pid and start time).
  const std::string parentKey = "/tmp/collcomm-pmi-" + std::to_string(getppid()) + "-";
  EXPECT_EQ(idFile(info).rfind(parentKey, 0), 0u) << idFile(info);
  env.set("PMI_JOBID", "job42");  // Slurm's PMI2, Cray
  EXPECT_EQ(idFile(info), "/tmp/collcomm-pmi-job42.id");
  env.set("SLURM_JOB_ID", "9");
  env.set("SLURM_STEP_ID", "1");
  EXPECT_EQ(idFile(info), "/tmp/collcomm-slurm-9.1.id");
}

TEST(LaunchEnv, SlurmStep) {
  ScopedEnv env;
  env.set("SLURM_PROCID", "3");
  env.set("SLURM_NTASKS", "8");  // the allocation's
  env.set("SLURM_STEP_NUM_TASKS", "4");
  env.set("SLURM_LOCALID", "1");
  env.set("SLURM_JOB_ID", "1234");
  env.set("SLURM_STEP_ID", "0");
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 1);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 4);  // the step's task count wins over the allocation's
  EXPECT_EQ(info.localRank, 1);
  EXPECT_STREQ(info.launcher, "slurm");
  EXPECT_EQ(idFile(info), "/tmp/collcomm-slurm-1234.0.id");
  unsetenv("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(detect().size, 8);
  env.set("COLLCOMM_ID_FILE", "/shared/job.id");
  EXPECT_EQ(idFile(info), "/shared/job.id");
}

TEST(LaunchEnv, SlurmBatchScriptIsNotAJobStep) {
  ScopedEnv env;  // sbatch's script: rank 0 of the allocation, but no step, one process
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_NTASKS", "4");
  env.set("SLURM_JOB_ID", "1234");
  ccLaunchInfo info = detect();
  EXPECT_EQ(info.launched, 0);
  EXPECT_STREQ(info.launcher, "none");
}

TEST(LaunchEnv, MostSpecificLauncherWins) {
  ScopedEnv env;  // mpirun inside a Slurm step, and ccrun inside mpirun
  env.set("SLURM_PROCID", "0");
  env.set("SLURM_NTASKS", "1");
  env.set("SLURM_STEP_ID", "0");
  env.set("OMPI_COMM_WORLD_RANK", "1");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  EXPECT_STREQ(detect().launcher, "openmpi");
  env.set("CCRUN_RANK", "0");
  env.set("CCRUN_SIZE", "1");
  EXPECT_STREQ(detect().launcher, "ccrun");
}

TEST(LaunchEnv, InconsistentVariablesAreRefused) {
  ScopedEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "2");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  ccLaunchInfo info = detect(ccInvalidUsage);
  EXPECT_STREQ(info.launcher, "untouched");  // out-param untouched on failure
  env.set("OMPI_COMM_WORLD_RANK", "-1");
  detect(ccInvalidUsage);
  env.set("OMPI_COMM_WORLD_RANK", "1x");
  detect(ccInvalidUsage);
  env.set("OMPI_COMM_WORLD_RANK", "1");
  env.set("OMPI_COMM_WORLD_SIZE", "0");
  detect(ccInvalidUsage);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  detect(ccInvalidUsage);
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "5");
  detect(ccInvalidUsage);
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  EXPECT_EQ(detect().rank, 1);
  EXPECT_EQ(ccLaunchDetect(nullptr), ccInvalidArgument);
}

TEST(LaunchEnv, EncodeDecodeRoundTrip) {
  ccUniqueId id, back;
  for (int i = 0; i < CC_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>(i * 37 + 5);
  char hex[2 * CC_UNIQUE_ID_BYTES + 1];
  ccLaunchEncodeId(&id, hex);
  EXPECT_EQ(strlen(hex), 2u * CC_UNIQUE_ID_BYTES);
  ASSERT_EQ(ccLaunchDecodeId(hex, &back), 0);
  EXPECT_EQ(memcmp(&id, &back, sizeof(id)), 0);
  for (char* c = hex; *c; ++c) *c = static_cast<char>(toupper(*c));
  ASSERT_EQ(ccLaunchDecodeId(hex, &back), 0);  // either case
  EXPECT_EQ(memcmp(&id, &back, sizeof(id)), 0);
  hex[7] = 'g';
  EXPECT_NE(ccLaunchDecodeId(hex, &back), 0);
  EXPECT_NE(ccLaunchDecodeId("abcd", &back), 0);
  EXPECT_NE(ccLaunchDecodeId(nullptr, &back), 0);
}

TEST(LaunchEnv, CcrunIdComesFromTheEnvironment) {
  ScopedEnv env;
  env.set("CCRUN_RANK", "1");
  env.set("CCRUN_SIZE", "2");
  ccLaunchInfo info = detect();
  ccUniqueId id, got;
  EXPECT_EQ(ccLaunchShareId(&info, &got, 1), ccInvalidUsage);  // unset
  env.set("CCRUN_UNIQUE_ID", "zz");
  EXPECT_EQ(ccLaunchShareId(&info, &got, 1), ccInvalidUsage);  // not an id
  for (int i = 0; i < CC_UNIQUE_ID_BYTES; ++i) id.internal[i] = static_cast<char>(255 - i);
  char hex[2 * CC_UNIQUE_ID_BYTES + 1];
  ccLaunchEncodeId(&id, hex);
  env.set("CCRUN_UNIQUE_ID", hex);
  ASSERT_EQ(ccLaunchShareId(&info, &got, 1), ccSuccess);
  EXPECT_EQ(memcmp(&id, &got, sizeof(id)), 0);
  EXPECT_EQ(ccLaunchShareId(nullptr, &got, 1), ccInvalidArgument);
  EXPECT_EQ(ccLaunchShareId(&info, nullptr, 1), ccInvalidArgument);
}

}  // namespace
}  // namespace collcomm::test
