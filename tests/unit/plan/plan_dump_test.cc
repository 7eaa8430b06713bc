// Plans as tools see them: ccCommDescribePlan's JSON against the tuner's own choices and the
// communicator's channels, its argument checks, and the PLAN log (each distinct plan once).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "collcomm.h"
#include "collectives/coll_work.h"
#include "core/comm.h"
#include "plan/tuner.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"
#include "unit/launch/run_command.h"
#include "unit/perf/json_lite.h"

namespace collcomm::detail {
namespace {

using test::Json;
using test::JsonReader;
using test::ThreadRanks;
using test::Watchdog;

// Sets COLLCOMM_* variables for the scope (communicators read them at init).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// The plan's JSON, parsed; fails the test on any error.
Json describe(ccComm_t comm, const char* coll, size_t count, ccDataType_t type, int root) {
  size_t needed = 0;
  EXPECT_EQ(ccCommDescribePlan(comm, coll, count, type, root, nullptr, 0, &needed), ccSuccess) << ccGetLastError(comm);
  std::string text(needed, '\0');
  size_t again = 0;
  EXPECT_EQ(ccCommDescribePlan(comm, coll, count, type, root, text.data(), text.size(), &again), ccSuccess)
      << ccGetLastError(comm);
  EXPECT_EQ(again, needed);
  EXPECT_EQ(text.back(), '\0');
  text.resize(needed > 0 ? needed - 1 : 0);
  Json j;
  EXPECT_TRUE(JsonReader(text).parse(&j)) << text;
  return j;
}

double num(const Json& j, const char* k) { return j.at(k).number; }

// Every field of an AllReduce plan against what the tuner chooses for the communicator and what
// the executors make of it (steps from the ring connections, kChunkSteps steps a chunk).
void expectAllReduceMatches(ccComm_t comm, size_t count, const Json& j) {
  SCOPED_TRACE("AllReduce of " + std::to_string(count) + " floats on rank " + std::to_string(comm->rank));
  const size_t bytes = count * sizeof(float);
  const CollPlan want = planCollective(comm->tuner, CollKind::kAllReduce, bytes, comm->nranks,
                                       static_cast<int>(comm->channels.size()), comm->directReach, comm->usesNet);
  EXPECT_EQ(j.at("collective").string, "AllReduce");
  EXPECT_EQ(num(j, "rank"), comm->rank);
  EXPECT_EQ(j.at("device").string, "host");
  EXPECT_EQ(num(j, "bytes"), static_cast<double>(bytes));
  EXPECT_EQ(num(j, "count"), static_cast<double>(count));
  EXPECT_EQ(j.at("dtype").string, "float");
  EXPECT_EQ(num(j, "root"), -1);
  EXPECT_EQ(num(j, "nranks"), comm->nranks);
  EXPECT_EQ(j.at("algorithm").string, algorithmName(want.algo));
  EXPECT_EQ(j.at("protocol").string, protocolName(want.proto));
  EXPECT_EQ(num(j, "channels"), want.nChannels);
  EXPECT_EQ(j.at("stream_results").boolean, want.streamResults);
  EXPECT_EQ(j.at("stream_steps").boolean, want.streamSteps);
  EXPECT_EQ(j.at("stream_steps_always").boolean, want.streamStepsAlways);
  const bool onRings = want.algo == Algorithm::kRing || (want.algo == Algorithm::kOneShot && comm->nranks == 2);
  EXPECT_EQ(j.at("on_rings").boolean, onRings);
  const Json& rings = j.at("rings");
  ASSERT_EQ(rings.kind, Json::kArray);
  if (!onRings) {
    EXPECT_EQ(num(j, "step_bytes"), 0);
    EXPECT_EQ(num(j, "chunk_elems"), 0);
    EXPECT_TRUE(rings.array.empty());
    return;
  }
  const SendConn& send = comm->channels[0].send;
  const size_t step = want.proto == Protocol::kLL ? send.llStepLines * kLlBytesPerLine : send.simpleStepMax;
  EXPECT_EQ(num(j, "step_elems"), static_cast<double>(step / sizeof(float)));
  EXPECT_EQ(num(j, "step_bytes"), static_cast<double>(step / sizeof(float) * sizeof(float)));
  EXPECT_EQ(num(j, "chunk_steps"), static_cast<double>(kChunkSteps));
  EXPECT_EQ(num(j, "chunk_elems"), static_cast<double>(step / sizeof(float) * kChunkSteps));
  EXPECT_EQ(num(j, "chunk_bytes"), static_cast<double>(step / sizeof(float) * kChunkSteps * sizeof(float)));
  ASSERT_EQ(rings.array.size(), static_cast<size_t>(want.nChannels));
  for (int c = 0; c < want.nChannels; ++c) {
    const std::vector<int>& ring = comm->channels[c].ringRanks;
    ASSERT_EQ(rings.array[c].array.size(), ring.size());
    for (size_t i = 0; i < ring.size(); ++i) EXPECT_EQ(rings.array[c].array[i].number, ring[i]) << "channel " << c;
  }
}

constexpr size_t k8B = 2, k1MiB = size_t{1} << 18, k64MiB = size_t{1} << 24;  // floats

// Default choices on 4 thread ranks: OneShot with LL at 8 B, Direct at 1 MiB and 64 MiB (every field
// checked against the tuner's own answer), on every rank. (The ring, by default between threads
// only where a rank receives more than the one-shot's 64 KiB below Direct's 16 KiB, is forced in the
// next test.)
TEST(PlanDump, AllReduceJsonMatchesTheTuner) {
  Watchdog watchdog(120, "PlanDump.AllReduceJsonMatchesTheTuner");
  ThreadRanks ranks(4);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  for (int r = 0; r < 4; ++r)
    for (size_t count : {k8B, k1MiB, k64MiB})
      expectAllReduceMatches(ranks.comm(r), count, describe(ranks.comm(r), "AllReduce", count, ccFloat32, 0));
  // What those choices are today (tuner.cc's thresholds for threads of one process).
  ccComm_t c = ranks.comm(0);
  ASSERT_EQ(c->directReach, DirectReach::kInProcess);
  const Json small = describe(c, "AllReduce", k8B, ccFloat32, 0);
  EXPECT_EQ(small.at("algorithm").string, "OneShot");
  EXPECT_EQ(small.at("protocol").string, "LL");
  EXPECT_EQ(describe(c, "allreduce", k1MiB, ccFloat32, 0).at("algorithm").string, "Direct");
  EXPECT_EQ(describe(c, "AllReduce", k64MiB, ccFloat32, 0).at("algorithm").string, "Direct");
}

// Forced choices (COLLCOMM_ALGO, COLLCOMM_PROTO) reach the plan, with the rings and steps they run
// on; two channels give two rings, each the communicator's.
TEST(PlanDump, ForcedChoicesAndTwoChannels) {
  Watchdog watchdog(180, "PlanDump.ForcedChoicesAndTwoChannels");
  const std::vector<std::vector<std::pair<std::string, std::string>>> variants = {
      {{"COLLCOMM_ALGO", "Ring"}, {"COLLCOMM_PROTO", "LL"}},
      {{"COLLCOMM_ALGO", "Ring"}, {"COLLCOMM_PROTO", "Simple"}},
      {{"COLLCOMM_ALGO", "OneShot"}},
      {{"COLLCOMM_ALGO", "Direct"}},
      {{"COLLCOMM_MIN_NCHANNELS", "2"}, {"COLLCOMM_MAX_NCHANNELS", "2"}, {"COLLCOMM_ALGO", "Ring"}},
  };
  for (const auto& vars : variants) {
    std::string name;
    for (const auto& [k, v] : vars) name += k + "=" + v + " ";
    SCOPED_TRACE(name);
    ScopedEnv env(vars);
    ThreadRanks ranks(4);
    ASSERT_EQ(ranks.initResult(), ccSuccess);
    for (int r = 0; r < 4; ++r)
      for (size_t count : {k8B, k1MiB, k64MiB}) {
        const Json j = describe(ranks.comm(r), "AllReduce", count, ccFloat32, 0);
        expectAllReduceMatches(ranks.comm(r), count, j);
        const std::string algo = vars[0].second;
        if (vars[0].first == "COLLCOMM_ALGO") {
          EXPECT_EQ(j.at("algorithm").string, algo);
        }
        if (vars.size() > 1 && vars[1].first == "COLLCOMM_PROTO") {
          EXPECT_EQ(j.at("protocol").string, vars[1].second);
        }
        if (vars.size() > 2) {
          EXPECT_EQ(num(j, "channels"), 2);
          EXPECT_EQ(j.at("rings").array.size(), 2u);
        }
      }
  }
}

// The other planned collectives: sizes per rank for AllGather/ReduceScatter, roots for
// Broadcast/Reduce, and the same planner (any case in the name).
TEST(PlanDump, OtherCollectivesCountAndRoot) {
  Watchdog watchdog(60, "PlanDump.OtherCollectivesCountAndRoot");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccComm_t c = ranks.comm(1);
  const Json ag = describe(c, "AllGather", 1000, ccFloat64, 0);
  EXPECT_EQ(num(ag, "bytes"), 1000 * 8 * 3);
  EXPECT_EQ(num(ag, "root"), -1);
  EXPECT_EQ(ag.at("dtype").string, "double");
  const CollPlan want = planCollective(c->tuner, CollKind::kAllGather, 1000 * 8 * 3, 3,
                                       static_cast<int>(c->channels.size()), c->directReach, c->usesNet);
  EXPECT_EQ(ag.at("algorithm").string, algorithmName(want.algo));
  const Json bc = describe(c, "BROADCAST", 10, ccInt8, 2);
  EXPECT_EQ(bc.at("collective").string, "Broadcast");
  EXPECT_EQ(num(bc, "root"), 2);
  EXPECT_EQ(num(describe(c, "Reduce", 10, ccInt32, 0), "root"), 0);
  EXPECT_EQ(num(describe(c, "ReduceScatter", 7, ccBfloat16, 0), "bytes"), 7 * 2 * 3);
}

// Every bad argument: ccInvalidArgument (or ccInvalidUsage) and a sentence naming it; a buffer too
// small says the size it needs.
TEST(PlanDump, BadArgumentsRejectedWithSentences) {
  Watchdog watchdog(60, "PlanDump.BadArgumentsRejectedWithSentences");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess);
  ccComm_t c = ranks.comm(0);
  char buf[4096];
  size_t needed = 0;
  auto expectRejected = [&](ccResult_t got, ccComm_t comm, const char* part) {
    EXPECT_EQ(got, ccInvalidArgument) << part;
    const std::string why = ccGetLastError(comm);
    EXPECT_NE(why.find("ccCommDescribePlan"), std::string::npos) << why;
    EXPECT_NE(why.find(part), std::string::npos) << why;
  };
  EXPECT_EQ(ccCommDescribePlan(nullptr, "AllReduce", 1, ccFloat32, 0, buf, sizeof(buf), &needed), ccInvalidArgument);
  EXPECT_NE(std::string(ccGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
  expectRejected(ccCommDescribePlan(c, nullptr, 1, ccFloat32, 0, buf, sizeof(buf), &needed), c, "collective is NULL");
  expectRejected(ccCommDescribePlan(c, "AllReduce2", 1, ccFloat32, 0, buf, sizeof(buf), &needed), c,
                 "\"AllReduce2\" is not a collective with a plan");
  expectRejected(ccCommDescribePlan(c, "Send", 1, ccFloat32, 0, buf, sizeof(buf), &needed), c, "point-to-point");
  expectRejected(ccCommDescribePlan(c, "AlltoAll", 1, ccFloat32, 0, buf, sizeof(buf), &needed), c, "\"AlltoAll\"");
  expectRejected(ccCommDescribePlan(c, "AllReduce", 1, static_cast<ccDataType_t>(99), 0, buf, sizeof(buf), &needed), c,
                 "datatype 99");
  expectRejected(ccCommDescribePlan(c, "Broadcast", 1, ccFloat32, 2, buf, sizeof(buf), &needed), c, "root 2");
  expectRejected(ccCommDescribePlan(c, "Reduce", 1, ccFloat32, -1, buf, sizeof(buf), &needed), c, "root -1");
  expectRejected(ccCommDescribePlan(c, "AllGather", SIZE_MAX / 4, ccFloat32, 0, buf, sizeof(buf), &needed), c,
                 "too large");
  expectRejected(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, 0, nullptr, 16, &needed), c, "json is NULL");
  expectRejected(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, 0, nullptr, 0, nullptr), c, "both NULL");
  // Root is ignored where the collective has none.
  EXPECT_EQ(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, -7, buf, sizeof(buf), nullptr), ccSuccess);
  // Too small: the error, and the size it needs; that size then works.
  needed = 0;
  expectRejected(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, 0, buf, 10, &needed), c, "too small");
  EXPECT_GT(needed, 10u);
  EXPECT_NE(std::string(ccGetLastError(c)).find(std::to_string(needed)), std::string::npos);
  EXPECT_EQ(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, 0, buf, needed, nullptr), ccSuccess);
  EXPECT_EQ(strlen(buf) + 1, needed);
  EXPECT_EQ(ccCommDescribePlan(c, "AllReduce", 1, ccFloat32, 0, buf, needed - 1, nullptr), ccInvalidArgument);

  // Made in a group: no plan until ccGroupEnd has connected it.
  ccUniqueId id;
  ASSERT_EQ(ccGetUniqueId(&id), ccSuccess);
  ccComm_t pending = nullptr;
  ASSERT_EQ(ccGroupStart(), ccSuccess);
  ASSERT_EQ(ccCommInitRank(&pending, 1, id, 0), ccSuccess);
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(ccCommDescribePlan(pending, "AllReduce", 1, ccFloat32, 0, buf, sizeof(buf), nullptr), ccInvalidUsage);
  EXPECT_NE(std::string(ccGetLastError(pending)).find("not initialised yet"), std::string::npos)
      << ccGetLastError(pending);
  ASSERT_EQ(ccGroupEnd(), ccSuccess);
  EXPECT_EQ(ccCommDescribePlan(pending, "AllReduce", 1, ccFloat32, 0, buf, sizeof(buf), nullptr), ccSuccess)
      << ccGetLastError(pending);
  EXPECT_EQ(ccCommDestroy(pending), ccSuccess);
}

// --- The PLAN log: this binary as a child with the log configured from the start (the log reads
// its configuration once per process).

constexpr const char* kChildVariable = "CC_PLAN_LOG_TEST_CHILD";

// The child: 4 thread ranks repeat AllReduce (8 B, 1 MiB) and Broadcast (1 KiB, roots 0 and 1)
// three times; then one rank alone makes more distinct plans than the log keeps. Returns what
// went wrong ("" when nothing did).
std::string runChildOperations() {
  {
    ThreadRanks ranks(4);
    if (ranks.initResult() != ccSuccess) return "init of 4 thread ranks failed";
    ranks.run([&](int r, ccComm_t comm) {
      std::vector<float> buf(k1MiB, 1.0f);
      for (int rep = 0; rep < 3; ++rep) {
        bool ok = ccAllReduce(buf.data(), buf.data(), k8B, ccFloat32, ccSum, comm, nullptr) == ccSuccess &&
                  ccAllReduce(buf.data(), buf.data(), k1MiB, ccFloat32, ccSum, comm, nullptr) == ccSuccess &&
                  ccBroadcast(buf.data(), buf.data(), 256, ccFloat32, 0, comm, nullptr) == ccSuccess &&
                  ccBroadcast(buf.data(), buf.data(), 256, ccFloat32, 1, comm, nullptr) == ccSuccess;
        if (!ok) ranks.fail("rank " + std::to_string(r) + ": " + ccGetLastError(comm));
      }
    });
    if (!ranks.ok()) return ranks.failures();
  }
  ThreadRanks alone(1);
  if (alone.initResult() != ccSuccess) return "init of one rank failed";
  std::vector<float> buf(PlanLog::kMaxPlans + 10, 1.0f);
  for (size_t n = 1; n <= buf.size(); ++n)
    if (ccAllReduce(buf.data(), buf.data(), n, ccFloat32, ccSum, alone.comm(0), nullptr) != ccSuccess)
      return std::string("one-rank allreduce failed: ") + ccGetLastError(alone.comm(0));
  return "";
}

// With CC_PLAN_LOG_TEST_CHILD set, this binary is the child: a gtest global environment that runs
// the operations and exits before any test runs (so the child is not a test of its own).
class PlanLogChild : public ::testing::Environment {
 public:
  void SetUp() override {
    if (getenv(kChildVariable) == nullptr) return;
    Watchdog watchdog(120, "the PLAN log child");
    const std::string failure = runChildOperations();
    if (!failure.empty()) fprintf(stderr, "child failed: %s\n", failure.c_str());
    fflush(stderr);
    _exit(failure.empty() ? 0 : 1);
  }
};

[[maybe_unused]] ::testing::Environment* const g_planLogChild = ::testing::AddGlobalTestEnvironment(new PlanLogChild);

int countOf(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(PlanLog, EachDistinctPlanOnce) {
  Watchdog watchdog(180, "PlanLog.EachDistinctPlanOnce");
  const std::string file = ::testing::TempDir() + "cc_plan_log_" + std::to_string(getpid()) + ".txt";
  std::vector<std::string> env;
  for (const std::string& e : test::cleanEnvironment())
    if (e.rfind("COLLCOMM_", 0) != 0) env.push_back(e);
  env.insert(env.end(), {std::string(kChildVariable) + "=1", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=PLAN",
                         "COLLCOMM_DEBUG_FILE=" + file});
  const test::CommandResult r = test::runCommand({test::selfPath()}, env, 150);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string log = ss.str();
  unlink(file.c_str());
  ASSERT_FALSE(log.empty()) << "nothing logged to " << file;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string at = " rank " + std::to_string(rank) + ": ";
    for (const std::string& plan :
         {"plan AllReduce" + at + "bytes 8, count 2, dtype float, root -1, nranks 4,",
          "plan AllReduce" + at + "bytes 1048576, count 262144, dtype float, root -1, nranks 4,",
          "plan Broadcast" + at + "bytes 1024, count 256, dtype float, root 0, nranks 4,",
          "plan Broadcast" + at + "bytes 1024, count 256, dtype float, root 1, nranks 4,"})
      EXPECT_EQ(countOf(log, plan), 1) << plan << "\n" << log.substr(0, 4000);
  }
  EXPECT_EQ(countOf(log, "nranks 4,"), 16) << log.substr(0, 4000);
  // Alone: the first kMaxPlans distinct plans, then one line saying no more will be logged.
  EXPECT_EQ(countOf(log, "nranks 1,"), static_cast<int>(PlanLog::kMaxPlans));
  EXPECT_EQ(countOf(log, "distinct plans logged; no new plan will be"), 1);
  EXPECT_EQ(countOf(log, "plan AllReduce rank 0: bytes 4, count 1, "), 1);
  EXPECT_EQ(countOf(log, "count " + std::to_string(PlanLog::kMaxPlans + 1) + ","), 0);
  // Only PLAN lines: the TUNING subsystem (every call) is off.
  EXPECT_EQ(countOf(log, " CC INFO "), countOf(log, "plan_log.cc"));
}

}  // namespace
}  // namespace collcomm::detail
