// ccrun, run as a user would: prefixed line-by-line output, the rank variables, failure and
// timeout handling (status, message, no hang), core binding, usage errors, and a real collcomm job
// whose id ccrun made.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collcomm.h"
#include "rank_child.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

const std::string kCcrun = std::string(COLLCOMM_BINARY_DIR) + "/tools/ccrun/ccrun";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// ccrun with these arguments, then `sh -c script`.
CommandResult ccrunShell(const std::vector<std::string>& options, const std::string& script, double timeout = 60) {
  std::vector<std::string> argv{kCcrun};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"sh", "-c", script});
  return runCommand(argv, cleanEnvironment(), timeout);
}

class Ccrun : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    if (stat(kCcrun.c_str(), &st) != 0) FAIL() << kCcrun << " is missing: build the ccrun target first";
  }
};

TEST_F(Ccrun, ForwardsPrefixedLinesAndSetsRankVariables) {
  Watchdog watchdog(60, "Ccrun.ForwardsPrefixedLinesAndSetsRankVariables");
  CommandResult r = ccrunShell(
      {"-n", "3"},
      "echo out $CCRUN_RANK $CCRUN_SIZE $CCRUN_LOCAL_RANK $CCRUN_LOCAL_SIZE ${#CCRUN_UNIQUE_ID} $CCRUN_UNIQUE_ID; "
      "echo err $CCRUN_RANK >&2; printf 'no newline'");
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  std::set<std::string> ids;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string p = "[" + std::to_string(rank) + "] ";
    const std::string want = p + "out " + std::to_string(rank) + " 3 " + std::to_string(rank) + " 3 256 ";
    const size_t at = r.out.find(want);
    ASSERT_NE(at, std::string::npos) << r.out;
    ids.insert(r.out.substr(at + want.size(), 256));
    EXPECT_NE(r.out.find(p + "no newline\n"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(p + "err " + std::to_string(rank) + "\n"), std::string::npos) << r.err;
  }
  EXPECT_EQ(ids.size(), 1u) << "every rank gets the same id";
}

TEST_F(Ccrun, LinesOfRanksDoNotMix) {
  Watchdog watchdog(60, "Ccrun.LinesOfRanksDoNotMix");
  // Each rank writes 2000 lines of 300 copies of its rank digit, in pieces, as fast as it can.
  CommandResult r = ccrunShell({"-n", "3"},
                               "line=$(printf \"%0300d\" 0 | tr 0 $CCRUN_RANK); i=0; while [ $i -lt 2000 ]; do "
                               "printf '%s' \"$line\"; echo; i=$((i+1)); done");
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  std::vector<std::string> ls = lines(r.out);
  EXPECT_EQ(ls.size(), 6000u);
  int bad = 0;
  for (const std::string& l : ls) {
    const bool ok = l.size() == 304 && l[0] == '[' && l[2] == ']' && l[3] == ' ' &&
                    l.find_first_not_of(l[1], 4) == std::string::npos;
    if (!ok && ++bad <= 3) ADD_FAILURE() << "mixed line: " << l.substr(0, 80);
  }
}

TEST_F(Ccrun, FailingRankEndsTheJobWithItsStatus) {
  Watchdog watchdog(60, "Ccrun.FailingRankEndsTheJobWithItsStatus");
  CommandResult r = ccrunShell({"-n", "3"}, "if [ $CCRUN_RANK = 1 ]; then sleep 0.2; exit 3; fi; sleep 100");
  EXPECT_EQ(r.exitCode(), 3) << r.err;
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("ccrun: rank 1 exited with status 3"), std::string::npos) << r.err;
}

TEST_F(Ccrun, KilledRankIsReportedBySignal) {
  Watchdog watchdog(60, "Ccrun.KilledRankIsReportedBySignal");
  CommandResult r = ccrunShell({"-n", "2"}, "if [ $CCRUN_RANK = 1 ]; then kill -KILL $$; fi; sleep 100");
  EXPECT_EQ(r.exitCode(), 128 + 9) << r.err;
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("ccrun: rank 1 was killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
}

TEST_F(Ccrun, RankIgnoringSigtermIsKilledAfterGrace) {
  Watchdog watchdog(60, "Ccrun.RankIgnoringSigtermIsKilledAfterGrace");
  CommandResult r = ccrunShell({"-n", "2", "--grace", "1"},
                               "if [ $CCRUN_RANK = 0 ]; then sleep 0.5; exit 5; fi; trap '' TERM; sleep 100");
  EXPECT_EQ(r.exitCode(), 5) << r.err;
  EXPECT_GT(r.seconds, 1.2);  // waited the grace period for rank 1
  EXPECT_LT(r.seconds, 20);
}

TEST_F(Ccrun, TimeoutEndsTheJob) {
  Watchdog watchdog(60, "Ccrun.TimeoutEndsTheJob");
  CommandResult r = ccrunShell({"-n", "2", "--timeout", "1"}, "sleep 100");
  EXPECT_EQ(r.exitCode(), 124) << r.err;
  EXPECT_GT(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 20);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
}

TEST_F(Ccrun, BindCorePinsRanksRoundRobin) {
  Watchdog watchdog(60, "Ccrun.BindCorePinsRanksRoundRobin");
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  const int n = static_cast<int>(cores.size()) + 1;  // one more rank than cores: wraps around
  CommandResult r = ccrunShell({"-n", std::to_string(n), "--bind", "core"},
                               "echo cpus $(grep Cpus_allowed_list /proc/self/status | cut -f2)");
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  for (int rank = 0; rank < n; ++rank) {
    const std::string want = "[" + std::to_string(rank) + "] cpus " + std::to_string(cores[rank % cores.size()]) + "\n";
    EXPECT_NE(r.out.find(want), std::string::npos) << want << r.out;
  }
  // More ranks than cores: said once, with the count of each and what to do instead.
  const std::string warning = "ccrun: warning: --bind core with " + std::to_string(n) + " ranks but " +
                              std::to_string(cores.size()) + " allowed cores: binding round robin";
  EXPECT_NE(r.err.find(warning), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use --bind none or at most " + std::to_string(cores.size()) + " ranks"), std::string::npos)
      << r.err;
}

TEST_F(Ccrun, BindCoreWithACoreEachDoesNotWarn) {
  Watchdog watchdog(60, "Ccrun.BindCoreWithACoreEachDoesNotWarn");
  CommandResult r = ccrunShell({"-n", "1", "--bind", "core"}, "true");
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

TEST_F(Ccrun, Version) {
  Watchdog watchdog(60, "Ccrun.Version");
  CommandResult r = runCommand({kCcrun, "--version"}, cleanEnvironment(), 20);
  EXPECT_EQ(r.exitCode(), 0) << r.err;
  char want[64];
  snprintf(want, sizeof(want), "ccrun (collcomm version %d.%d.%d%s)\n", CC_MAJOR, CC_MINOR, CC_PATCH, CC_SUFFIX);
  EXPECT_EQ(r.out, want);
}

TEST_F(Ccrun, UsageErrors) {
  Watchdog watchdog(60, "Ccrun.UsageErrors");
  EXPECT_EQ(runCommand({kCcrun}, cleanEnvironment(), 20).exitCode(), 2);
  EXPECT_EQ(runCommand({kCcrun, "-n", "0", "true"}, cleanEnvironment(), 20).exitCode(), 2);
  EXPECT_EQ(runCommand({kCcrun, "-n", "2", "--bind", "socket", "true"}, cleanEnvironment(), 20).exitCode(), 2);
  EXPECT_EQ(runCommand({kCcrun, "-n", "2", "--timeout", "-1", "true"}, cleanEnvironment(), 20).exitCode(), 2);
  CommandResult help = runCommand({kCcrun, "-h"}, cleanEnvironment(), 20);
  EXPECT_EQ(help.exitCode(), 0);
  EXPECT_NE(help.out.find("usage: ccrun -n N"), std::string::npos);
  CommandResult missing = runCommand({kCcrun, "-n", "2", "/nonexistent/program"}, cleanEnvironment(), 20);
  EXPECT_EQ(missing.exitCode(), 127);
  EXPECT_NE(missing.err.find("cannot start rank 0"), std::string::npos) << missing.err;
}

// A real job: the ranks read ccrun's id (ccrun serves its rendezvous) and all-reduce.
TEST_F(Ccrun, RanksFormACommunicatorWithCcrunsId) {
  Watchdog watchdog(120, "Ccrun.RanksFormACommunicatorWithCcrunsId");
  std::vector<std::string> argv{kCcrun, "-n", "3", "--timeout", "90"};
  for (const std::string& a : childArgv()) argv.push_back(a);
  CommandResult r = runCommand(argv, cleanEnvironment({"CC_LAUNCH_TEST_CHILD=1", "COLLCOMM_TIMEOUT=30"}), 100);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string p = "[" + std::to_string(rank) + "] ";
    EXPECT_NE(r.out.find(p + "rank " + std::to_string(rank) + " of 3 via ccrun\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(p + "sum 6\n"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace collcomm::test
