// cc-plan --host against the library: every row's algorithm and protocol are what planCollective
// chooses for the same communicator, and its time what hostEstimateCollUs gives for them; with
// --choose model, the least estimate among the algorithms and protocols the executor runs there.
// Runs the built cc-plan (COLLCOMM_CC_PLAN), so the tool's own arithmetic is what is checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/init.h"
#include "plan/host_model.h"
#include "plan/tuner.h"

#ifndef COLLCOMM_CC_PLAN
#define COLLCOMM_CC_PLAN ""  // tools not built: the tests skip
#endif

namespace collcomm::detail {
namespace {

class CcPlanHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string(COLLCOMM_CC_PLAN).empty()) GTEST_SKIP() << "cc-plan is not built";
  }
};

struct Row {
  size_t bytes;
  double us;
  std::string algo, proto;
};

// A JSON line's value of `name` (numbers as written, strings without their quotes); "" if absent.
std::string field(const std::string& line, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  size_t begin = at + key.size(), end = line.find_first_of(",}", begin);
  if (line[begin] == '"') end = line.find('"', ++begin);
  return line.substr(begin, end - begin);
}

// The rows cc-plan prints for `args` (the first JSON line, the communicator, is checked and left out).
std::vector<Row> ccPlanRows(const std::string& args, std::string* header = nullptr) {
  const std::string cmd = std::string(COLLCOMM_CC_PLAN) + " --host --json " + args + " 2>&1";
  FILE* out = popen(cmd.c_str(), "r");
  EXPECT_NE(out, nullptr) << cmd;
  std::vector<Row> rows;
  if (out == nullptr) return rows;
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), out)) > 0;) text.append(buf, n);
  EXPECT_EQ(pclose(out), 0) << cmd << ": " << text;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const std::string line = text.substr(start, end - start);
    if (start == 0) {
      EXPECT_EQ(field(line, "host"), "true") << line;
      if (header != nullptr) *header = line;
      continue;
    }
    rows.push_back({std::stoull(field(line, "size")), std::stod(field(line, "time_us")), field(line, "algo"),
                    field(line, "proto")});
  }
  EXPECT_FALSE(rows.empty()) << cmd << ": " << text;
  return rows;
}

struct Job {
  const char* args;  // the communicator, on cc-plan's command line
  int ranks;
  int hosts;
  DirectReach reach;
  HostLinkClass cls;
};

const Job kJobs[] = {
    {"--ranks 2", 2, 1, DirectReach::kInProcess, HostLinkClass::kThreads},
    {"--ranks 4", 4, 1, DirectReach::kInProcess, HostLinkClass::kThreads},
    {"--ranks 2 --processes", 2, 1, DirectReach::kCrossProcess, HostLinkClass::kProcesses},
    {"--ranks 8 --processes", 8, 1, DirectReach::kCrossProcess, HostLinkClass::kProcesses},
    {"--ranks 2 --hosts 2", 2, 2, DirectReach::kNone, HostLinkClass::kNet},
    {"--ranks 4 --hosts 4", 4, 4, DirectReach::kNone, HostLinkClass::kNet},
    {"--ranks 6 --hosts 3", 6, 3, DirectReach::kNone, HostLinkClass::kNet},
};

constexpr size_t kSimpleStep = 129344, kLlStep = 4096;  // the NET ring's steps of the calibration
const char* const kSweep = " -b 4 -e 64M -f 2 --simple-step 129344 --ll-step 4096";

struct OpCase {
  const char* name;
  CollKind kind;
};
const OpCase kOps[] = {{"allreduce", CollKind::kAllReduce},
                       {"allgather", CollKind::kAllGather},
                       {"reducescatter", CollKind::kReduceScatter},
                       {"broadcast", CollKind::kBroadcast},
                       {"reduce", CollKind::kReduce}};

double estimate(const Job& job, CollKind kind, Algorithm a, Protocol p, size_t bytes) {
  return hostEstimateCollUs(kind, a, p, bytes, job.ranks, job.cls, p == Protocol::kLL ? kLlStep : kSimpleStep);
}

// Printed with three decimals.
void expectTime(double printed, double us, const std::string& what) {
  EXPECT_LE(std::fabs(printed - us), 5.1e-4 + 1e-12 * us) << what << ": printed " << printed << ", model " << us;
}

TEST_F(CcPlanHost, RowsAreThePlannersChoiceAndTheModelsTime) {
  TunerConfig cfg;
  ASSERT_EQ(loadTunerConfig(&cfg), kOk);
  for (const Job& job : kJobs) {
    for (const OpCase& op : kOps) {
      const std::vector<Row> rows = ccPlanRows(std::string(job.args) + " --op " + op.name + kSweep);
      for (const Row& r : rows) {
        const CollPlan p = planCollective(cfg, op.kind, r.bytes, job.ranks, 1, job.reach, job.hosts > 1, job.hosts,
                                          kSimpleStep, kLlStep);
        const std::string what = std::string(job.args) + " " + op.name + " " + std::to_string(r.bytes) + " B";
        EXPECT_EQ(r.algo, algorithmName(p.algo)) << what;
        EXPECT_EQ(r.proto, protocolName(p.proto)) << what;
        expectTime(r.us, estimate(job, op.kind, p.algo, p.proto, r.bytes), what);
      }
    }
  }
}

// The candidates, as the oracle knows them: Ring always; for AllReduce on two or more ranks OneShot
// and Tree; Direct (Simple only) for the collectives that have it, on ranks of one host.
TEST_F(CcPlanHost, ModelChoiceIsTheLeastEstimate) {
  for (const Job& job : kJobs) {
    for (const OpCase& op : kOps) {
      const std::vector<Row> rows = ccPlanRows(std::string(job.args) + " --choose model --op " + op.name + kSweep);
      for (const Row& r : rows) {
        const std::string what = std::string(job.args) + " " + op.name + " " + std::to_string(r.bytes) + " B";
        double least = -1;
        for (Algorithm a : {Algorithm::kRing, Algorithm::kOneShot, Algorithm::kTree, Algorithm::kDirect}) {
          if ((a == Algorithm::kOneShot || a == Algorithm::kTree) && op.kind != CollKind::kAllReduce) continue;
          if (a == Algorithm::kDirect && (job.reach == DirectReach::kNone || !hasDirect(op.kind))) continue;
          for (Protocol p : {Protocol::kSimple, Protocol::kLL}) {
            if (a == Algorithm::kDirect && p == Protocol::kLL) continue;
            const double us = estimate(job, op.kind, a, p, r.bytes);
            if (least < 0 || us < least) least = us;
          }
        }
        expectTime(r.us, least, what);
        Algorithm chosen = Algorithm::kRing;
        for (Algorithm a : {Algorithm::kOneShot, Algorithm::kTree, Algorithm::kDirect})
          if (r.algo == algorithmName(a)) chosen = a;
        EXPECT_EQ(r.algo, algorithmName(chosen)) << what;
        expectTime(r.us, estimate(job, op.kind, chosen, r.proto == "LL" ? Protocol::kLL : Protocol::kSimple, r.bytes),
                   what + " (" + r.algo + "/" + r.proto + ")");
      }
    }
  }
}

TEST_F(CcPlanHost, ForcedChoicesAreKept) {
  for (const char* args : {"--ranks 4 --algo tree --proto ll", "--ranks 4 --hosts 2 --algo tree --proto ll",
                           "--ranks 4 --choose model --algo tree --proto ll"}) {
    for (const Row& r : ccPlanRows(std::string(args) + " -b 8 -e 16M -f 8")) {
      EXPECT_EQ(r.algo, "Tree") << args << " " << r.bytes;
      EXPECT_EQ(r.proto, "LL") << args << " " << r.bytes;
    }
  }
  // --choose model with only the protocol forced still chooses the algorithm (one-shot at 8 B).
  const std::vector<Row> rows = ccPlanRows("--ranks 4 --choose model --proto ll -b 8 -e 8");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].algo, "OneShot");
  EXPECT_EQ(rows[0].proto, "LL");
}

// Without --simple-step and --ll-step the steps are the FIFO's that COLLCOMM_BUFFSIZE and
// COLLCOMM_LL_BUFFSIZE give, and the channels the ones a communicator connects (one).
TEST_F(CcPlanHost, DefaultsAreTheCommunicatorsOwn) {
  const FifoSizes fifo = fifoSizesFromParams();
  std::string header;
  ccPlanRows("--ranks 4 -b 1M -e 1M", &header);
  EXPECT_EQ(field(header, "simple_step"), std::to_string(fifo.ring.simpleStepBytes)) << header;
  EXPECT_EQ(field(header, "ll_step"), std::to_string(fifo.ring.llStepLines * kLlBytesPerLine)) << header;
  EXPECT_EQ(field(header, "channels"), "1") << header;
  EXPECT_EQ(field(header, "link_class"), "threads") << header;
  EXPECT_EQ(field(header, "choice"), "planner") << header;
}

// --cpus fewer than a host's ranks plans with the thresholds a communicator takes there
// (tuneForOversubscribedHost); enough CPUs, or none given, plans as a CPU per rank.
TEST_F(CcPlanHost, FewerCpusThanRanksPlansAsAnOversubscribedHost) {
  TunerConfig cfg;
  ASSERT_EQ(loadTunerConfig(&cfg), kOk);
  TunerConfig crowded = cfg;
  tuneForOversubscribedHost(&crowded);
  const char* const sweep = " --op broadcast -b 1K -e 1M -f 2";
  for (const char* args : {"--ranks 4", "--ranks 4 --cpus 4", "--ranks 4 --cpus 2", "--ranks 8 --hosts 2 --cpus 2"}) {
    std::string header;
    const std::vector<Row> rows = ccPlanRows(std::string(args) + sweep, &header);
    const bool over = std::string(args).find("--cpus 2") != std::string::npos;
    const bool net = std::string(args).find("--hosts") != std::string::npos;
    EXPECT_EQ(field(header, "oversubscribed"), over ? "true" : "false") << args << ": " << header;
    for (const Row& r : rows) {
      const CollPlan p = planCollective(over ? crowded : cfg, CollKind::kBroadcast, r.bytes, net ? 8 : 4, 1,
                                        net ? DirectReach::kNone : DirectReach::kInProcess, net, net ? 2 : 1);
      EXPECT_EQ(r.algo, algorithmName(p.algo)) << args << " " << r.bytes << " B";
    }
  }
  // The sweep crosses both Broadcast thresholds, so the two plans really differ on it.
  bool differ = false;
  for (size_t b = 1024; b <= (size_t{1} << 20); b *= 2)
    differ |= planCollective(cfg, CollKind::kBroadcast, b, 4, 1, DirectReach::kInProcess).algo !=
              planCollective(crowded, CollKind::kBroadcast, b, 4, 1, DirectReach::kInProcess).algo;
  EXPECT_TRUE(differ);
}

}  // namespace
}  // namespace collcomm::detail
