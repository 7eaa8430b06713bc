// Misconfiguration is never silent: a value a COLLCOMM_* variable does not accept, an unknown
// COLLCOMM_DEBUG level or subsystem, and an unknown COLLCOMM_* name each warn on stderr whatever
// COLLCOMM_DEBUG says, once per process; COLLCOMM_DEBUG=VERSION prints the version banner once.
// Each case runs in a fresh process (this binary again, as the ParamsChild environment), because
// the warnings and the log configuration are once per process.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collcomm.h"
#include "common/log.h"
#include "common/params.h"
#include "support/watchdog.h"
#include "unit/launch/run_command.h"

namespace collcomm::detail {
namespace {

using test::CommandResult;

constexpr const char* kChildVariable = "CC_PARAMS_TEST_CHILD";

// The child, a gtest global environment that acts (and exits) before any test runs when
// CC_PARAMS_TEST_CHILD is set: reads every variable twice, every way, then logs once (which reads
// the log configuration), and says it finished.
class ParamsChild : public ::testing::Environment {
 public:
  void SetUp() override {
    if (getenv(kChildVariable) == nullptr) return;
    for (int round = 0; round < 2; ++round)
      for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
        const Param p = static_cast<Param>(i);
        if (paramInfo(p).isInt) (void)paramInt(p);
        (void)paramStr(p);
        (void)paramIsSet(p);
      }
    CC_INFO(kSubsysInit, "child logged");
    printf("child done\n");
    fflush(stdout);
    exit(0);
  }
};

[[maybe_unused]] ::testing::Environment* const g_paramsChild = ::testing::AddGlobalTestEnvironment(new ParamsChild);

// This binary as the child, with no COLLCOMM_* variable but `vars`.
CommandResult runChild(const std::vector<std::string>& vars) {
  std::vector<std::string> env;
  for (const std::string& e : test::cleanEnvironment())
    if (e.rfind("COLLCOMM_", 0) != 0) env.push_back(e);
  env.push_back(std::string(kChildVariable) + "=1");
  env.insert(env.end(), vars.begin(), vars.end());
  CommandResult r = test::runCommand({test::selfPath(), "--gtest_filter=Params.IntegerParsingAndDefaults"}, env, 60);
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("child done"), std::string::npos) << r.out;
  return r;
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// One warning line holding `want`, with the log prefix ("host:pid:tid CC WARN ").
void expectWarnedOnce(const std::string& err, const std::string& want) {
  EXPECT_EQ(count(err, want), 1) << "want once: " << want << "\nstderr:\n" << err;
  const size_t at = err.find(want);
  if (at == std::string::npos) return;
  const size_t lineStart = err.rfind('\n', at) == std::string::npos ? 0 : err.rfind('\n', at) + 1;
  EXPECT_NE(err.substr(lineStart, at - lineStart).find(" CC WARN "), std::string::npos) << err;
}

TEST(ParamsWarnings, NothingWhenAllIsWell) {
  test::Watchdog watchdog(60, "ParamsWarnings.NothingWhenAllIsWell");
  CommandResult r = runChild({"COLLCOMM_TIMEOUT=30", "COLLCOMM_HOST_SIMD=Portable", "COLLCOMM_DEBUG_SUBSYS=^net"});
  EXPECT_EQ(r.err, "");
}

TEST(ParamsWarnings, BadValuesWarnWithoutDebugOutput) {
  test::Watchdog watchdog(60, "ParamsWarnings.BadValuesWarnWithoutDebugOutput");
  CommandResult r = runChild({"COLLCOMM_TIMEOUT=abc", "COLLCOMM_SHM_DISABLE=2", "COLLCOMM_MAX_NCHANNELS=65",
                              "COLLCOMM_HOST_SIMD=avx9", "COLLCOMM_DEBUG=LOUD", "COLLCOMM_DEBUG_SUBSYS=INIT,NETT",
                              "COLLCOMM_DEBUG_FILE=/nonexistent/dir/log"});
  expectWarnedOnce(r.err, "COLLCOMM_TIMEOUT=\"abc\" is not an integer; using the default 300");
  expectWarnedOnce(r.err, "COLLCOMM_SHM_DISABLE=\"2\" is out of range (0 to 1); using the default 0");
  expectWarnedOnce(r.err, "COLLCOMM_MAX_NCHANNELS=\"65\" is out of range (-1 to 64); using the default -1");
  expectWarnedOnce(r.err,
                   "COLLCOMM_HOST_SIMD=\"avx9\" is not one of auto, avx512, avx2, portable; using the default auto");
  expectWarnedOnce(r.err, "COLLCOMM_DEBUG=\"LOUD\" is not a level (VERSION, WARN, INFO, TRACE); logging nothing");
  expectWarnedOnce(r.err, "COLLCOMM_DEBUG_SUBSYS=\"INIT,NETT\" has unknown subsystems NETT (known: INIT, COLL,");
  expectWarnedOnce(r.err, "COLLCOMM_DEBUG_FILE=\"/nonexistent/dir/log\" cannot be opened (/nonexistent/dir/log: ");
  EXPECT_EQ(count(r.err, "\n"), 7) << "one line per bad variable:\n" << r.err;
}

TEST(ParamsWarnings, EveryIntegerVariableWarnsOnANonNumber) {
  test::Watchdog watchdog(60, "ParamsWarnings.EveryIntegerVariableWarnsOnANonNumber");
  std::vector<std::string> vars;
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i)
    if (paramInfo(static_cast<Param>(i)).isInt)
      vars.push_back(std::string(paramInfo(static_cast<Param>(i)).name) + "=7x");
  CommandResult r = runChild(vars);
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<Param>(i));
    if (info.isInt) expectWarnedOnce(r.err, std::string(info.name) + "=\"7x\" is not an integer; using the default ");
  }
}

TEST(ParamsWarnings, EveryRangeAndWordListIsEnforced) {
  test::Watchdog watchdog(60, "ParamsWarnings.EveryRangeAndWordListIsEnforced");
  std::vector<std::string> vars, wants;
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<Param>(i));
    if (info.isInt && (info.least != INT64_MIN || info.most != INT64_MAX)) {
      const std::string past = info.most != INT64_MAX ? std::to_string(info.most + 1) : std::to_string(info.least - 1);
      vars.push_back(std::string(info.name) + "=" + past);
      wants.push_back(std::string(info.name) + "=\"" + past + "\" is out of range (");
    } else if (info.words != nullptr) {
      vars.push_back(std::string(info.name) + "=nonsense");
      wants.push_back(std::string(info.name) + "=\"nonsense\" is not one of ");
    }
  }
  ASSERT_GE(wants.size(), 20u);
  CommandResult r = runChild(vars);
  for (const std::string& want : wants) expectWarnedOnce(r.err, want);
}

TEST(ParamsWarnings, UnknownVariablesWarnInOneLine) {
  test::Watchdog watchdog(60, "ParamsWarnings.UnknownVariablesWarnInOneLine");
  CommandResult r = runChild({"COLLCOMM_TIMOUT=5", "COLLCOMM_SHM_DISABEL=1"});
  expectWarnedOnce(r.err,
                   "COLLCOMM_TIMOUT, COLLCOMM_SHM_DISABEL are set, but collcomm has no such variables (a typo? "
                   "docs/env.md lists them all); ignored");
  EXPECT_EQ(count(r.err, "\n"), 1) << r.err;
}

TEST(ParamsWarnings, DebugVersionPrintsTheBannerOnce) {
  test::Watchdog watchdog(60, "ParamsWarnings.DebugVersionPrintsTheBannerOnce");
  char want[96];
  snprintf(want, sizeof(want), " CC VERSION collcomm version %d.%d.%d%s (host executor; ", CC_MAJOR, CC_MINOR, CC_PATCH,
           CC_SUFFIX);
  CommandResult r = runChild({"COLLCOMM_DEBUG=version"});
  EXPECT_EQ(count(r.err, want), 1) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1) << "VERSION prints the banner only:\n" << r.err;
  // Every level above VERSION prints it too, before anything else.
  r = runChild({"COLLCOMM_DEBUG=INFO"});
  EXPECT_EQ(count(r.err, want), 1) << r.err;
  EXPECT_LT(r.err.find(want), r.err.find("child logged")) << r.err;
}

// In this process: a word reads as declared, whatever its case; a bad value reads as unset.
TEST(ParamsWarnings, AcceptedWordsReadAsDeclaredAndBadValuesAsUnset) {
  setenv("COLLCOMM_P2P_LEVEL", "pxb", 1);
  EXPECT_TRUE(paramIsSet(Param::kP2pLevel));
  EXPECT_EQ(paramStr(Param::kP2pLevel), "PXB");
  setenv("COLLCOMM_P2P_LEVEL", "near", 1);
  EXPECT_FALSE(paramIsSet(Param::kP2pLevel));
  EXPECT_EQ(paramStr(Param::kP2pLevel), "");
  unsetenv("COLLCOMM_P2P_LEVEL");
  setenv("COLLCOMM_SPIN_COUNT", "-3", 1);
  EXPECT_FALSE(paramIsSet(Param::kSpinCount));
  EXPECT_EQ(paramInt(Param::kSpinCount), 2000);
  setenv("COLLCOMM_SPIN_COUNT", "", 1);
  EXPECT_FALSE(paramIsSet(Param::kSpinCount)) << "an empty value is unset";
  unsetenv("COLLCOMM_SPIN_COUNT");
}

// Ranges belong to integers and words to strings, and every default is accepted.
TEST(ParamsWarnings, DeclarationsAreConsistent) {
  for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
    const ParamInfo& info = paramInfo(static_cast<Param>(i));
    if (info.isInt) {
      EXPECT_EQ(info.words, nullptr) << info.name;
      char* end = nullptr;
      const long long def = strtoll(info.defaultValue, &end, 0);
      EXPECT_TRUE(*end == '\0' && def >= info.least && def <= info.most)
          << info.name << " default " << info.defaultValue;
    } else {
      EXPECT_TRUE(info.least == INT64_MIN && info.most == INT64_MAX) << info.name << " is a string with a range";
      if (info.words != nullptr && info.defaultValue[0] != '\0') {
        EXPECT_NE((std::string("|") + info.words + "|").find(std::string("|") + info.defaultValue + "|"),
                  std::string::npos)
            << info.name;
      }
    }
  }
}

}  // namespace
}  // namespace collcomm::detail
