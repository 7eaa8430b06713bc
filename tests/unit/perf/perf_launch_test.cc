// The perf binaries with ranks as processes: under ccrun (this repository's launcher) and under
// Open MPI's mpirun, each process also running threads (-t). Skipped when the launcher is absent.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "perf_run.h"

namespace collcomm::test {
namespace {

constexpr int kTimeout = 120;

// Two processes x two threads: four ranks, two pids, rows with no wrong element.
void checkFourRanksInTwoProcesses(const RunResult& r, bool prefixed, const std::string& program) {
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out, prefixed);
  EXPECT_TRUE(t.hasComment("# Collective test starting: " + program)) << r.out;
  const std::regex rankLine(R"(^#  Rank +(\d+) Group +0 Pid +(\d+) on +\S+ device  host \[cores [0-9,-]+\]$)");
  std::set<std::string> pids;
  int next = 0;
  for (const std::string& c : t.commentsStarting("#  Rank ")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(c, m, rankLine)) << c;
    EXPECT_EQ(std::stoi(m[1]), next++);
    pids.insert(m[2]);
  }
  EXPECT_EQ(next, 4);
  EXPECT_EQ(pids.size(), 2u);
  ASSERT_EQ(t.rows.size(), 3u) << r.out;  // 8, 512, 32768
  for (const auto& f : t.rows) {
    ASSERT_EQ(f.size(), 13u);
    EXPECT_EQ(f[8], "0");
    EXPECT_EQ(f[12], "0");
  }
  EXPECT_TRUE(t.hasComment("# Out of bounds values : 0 OK")) << r.out;
}

const std::vector<std::string> kSweep = {"-t", "2", "-b", "8", "-e", "32K", "-f", "64", "-n", "3", "-w", "1"};

TEST(PerfLaunch, UnderCcrun) {
  const std::string ccrun = std::string(COLLCOMM_BINARY_DIR) + "/tools/ccrun/ccrun";
  if (!isExecutable(ccrun)) GTEST_SKIP() << "ccrun is not built";
  for (const char* program : {"all_reduce_perf", "reduce_scatter_perf"}) {
    SCOPED_TRACE(program);
    std::vector<std::string> argv = {ccrun, "-n", "2", "--timeout", "100", perfBinary(program)};
    argv.insert(argv.end(), kSweep.begin(), kSweep.end());
    // ccrun prefixes each line with "[rank] "; only rank 0 prints.
    checkFourRanksInTwoProcesses(runProgram(argv, {}, kTimeout), true, program);
  }
}

TEST(PerfLaunch, UnderOpenMpiMpirun) {
  const std::string mpirun = onPath("mpirun");
  if (mpirun.empty()) GTEST_SKIP() << "no mpirun on PATH";
  RunResult v = runProgram({mpirun, "--version"}, {}, 30);
  if (v.out.find("Open MPI") == std::string::npos && v.out.find("OpenRTE") == std::string::npos)
    GTEST_SKIP() << "mpirun is not Open MPI's";
  std::vector<std::string> argv = {
      mpirun, "-np", "2", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", perfBinary("all_reduce_perf")};
  argv.insert(argv.end(), kSweep.begin(), kSweep.end());
  checkFourRanksInTwoProcesses(runProgram(argv, {}, kTimeout), false, "all_reduce_perf");
}

}  // namespace
}  // namespace collcomm::test
