// The perf binaries as their users see them: run each as a child process (ranks as threads), and
// check its output against nccl-tests' format — header lines, the "# Using devices" block, the
// column header to the character, one row per size with the right size/count/type/redop/root,
// #wrong 0 everywhere, the footer — and the exit status. Also -d all -o all, -I, -J, the library
// choices at COLLCOMM_DEBUG=INFO, usage errors, and that broken results are counted.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "json_lite.h"
#include "perf_run.h"

namespace collcomm::test {
namespace {

constexpr int kTimeout = 90;  // seconds per child; sanitizer builds are slow

// nccl-tests' column header (right-trimmed).
const char* const kColumnHeader[] = {
    "#                                                              out-of-place                       in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
};

struct PerfCase {
  const char* program;
  bool partitioned;  // the count argument is count/n (AllGather, ReduceScatter, AlltoAll, Gather, Scatter)
  bool reduces;
  bool rooted;
  bool inPlaceChecked;  // false: in-place #wrong is N/A (nccl-tests: AlltoAll, SendRecv)
};

const PerfCase kCases[] = {
    {"all_reduce_perf", false, true, false, true},    {"all_gather_perf", true, false, false, true},
    {"broadcast_perf", false, false, true, true},     {"reduce_perf", false, true, true, true},
    {"reduce_scatter_perf", true, true, false, true}, {"alltoall_perf", true, false, false, false},
    {"gather_perf", true, false, true, true},         {"scatter_perf", true, false, true, true},
    {"sendrecv_perf", false, false, false, false},
};

// gtest names parameters by this.
void PrintTo(const PerfCase& c, std::ostream* os) { *os << c.program; }

const PerfCase& caseFor(const std::string& program) {
  for (const PerfCase& c : kCases)
    if (program == c.program) return c;
  return kCases[0];
}

struct ExpectedRow {
  size_t bytes;
  size_t count;
  std::string type;
  std::string redop;
  int root;
};

// The row a sweep size gives, by nccl-tests' rules.
ExpectedRow expectRow(const PerfCase& c, size_t size, size_t elem, int nranks, const std::string& type,
                      const std::string& redop, int root) {
  size_t count = size / elem;
  size_t bytes = count * elem;
  if (c.partitioned) {
    count = count / nranks;
    bytes = count * nranks * elem;
  }
  return {bytes, count, type, c.reduces ? redop : "none", c.rooted ? root : -1};
}

bool isNumber(const std::string& s) {
  char* end = nullptr;
  strtod(s.c_str(), &end);
  return !s.empty() && end != nullptr && *end == '\0';
}

// Everything about one run's output except the rows' contents.
void checkFrame(const Table& t, const std::string& program, int nranks, bool perIter) {
  EXPECT_TRUE(t.hasComment("# Collective test starting: " + program));
  EXPECT_TRUE(t.hasComment("# Collective test concluded: " + program));
  const auto nthread = t.commentsStarting("# nThread ");
  ASSERT_EQ(nthread.size(), 1u);
  EXPECT_NE(nthread[0].find(" nGpus 1 minBytes "), std::string::npos) << nthread[0];
  EXPECT_NE(nthread[0].find(" warmup iters: "), std::string::npos) << nthread[0];
  EXPECT_TRUE(t.hasComment("# Using devices"));
  const std::regex rankLine(R"(^#  Rank +(\d+) Group +0 Pid +(\d+) on +\S+ device  host \[cores [0-9,-]+\]$)");
  int next = 0;
  for (const std::string& c : t.commentsStarting("#  Rank ")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(c, m, rankLine)) << c;
    EXPECT_EQ(std::stoi(m[1]), next++);
  }
  EXPECT_EQ(next, nranks);
  if (!perIter) {
    for (const char* h : kColumnHeader) EXPECT_TRUE(t.hasComment(h)) << "missing column header line:\n" << h;
  }
  EXPECT_TRUE(t.hasComment("# Out of bounds values : 0 OK"));
  const auto avg = t.commentsStarting("# Avg bus bandwidth    : ");
  ASSERT_EQ(avg.size(), 1u);
  EXPECT_TRUE(isNumber(avg[0].substr(strlen("# Avg bus bandwidth    : ")))) << avg[0];
}

void checkRows(const Table& t, const PerfCase& c, const std::vector<ExpectedRow>& want, bool perIter) {
  ASSERT_EQ(t.rows.size(), want.size()) << "one row per size expected";
  const size_t fields = perIter ? 21 : 13;
  const size_t placeWidth = perIter ? 8 : 4;
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& f = t.rows[i];
    SCOPED_TRACE(t.rowLines[i]);
    ASSERT_EQ(f.size(), fields);
    EXPECT_EQ(f[0], std::to_string(want[i].bytes));
    EXPECT_EQ(f[1], std::to_string(want[i].count));
    EXPECT_EQ(f[2], want[i].type);
    EXPECT_EQ(f[3], want[i].redop);
    EXPECT_EQ(f[4], std::to_string(want[i].root));
    for (size_t p = 0; p < 2; ++p) {
      const size_t b = 5 + p * placeWidth;
      EXPECT_TRUE(isNumber(f[b]) && isNumber(f[b + 1]) && isNumber(f[b + 2]));
      const bool checked = p == 0 || c.inPlaceChecked;
      EXPECT_EQ(f[b + 3], checked ? "0" : "N/A");
      for (size_t k = 4; k < placeWidth; ++k) EXPECT_TRUE(isNumber(f[b + k])) << f[b + k];
    }
    // Widths: size and count are 12 wide, right-aligned, like nccl-tests.
    EXPECT_EQ(t.rowLines[i].find(f[0]) + f[0].size(), 12u);
  }
}

std::vector<size_t> factorSizes(size_t lo, size_t hi, size_t factor) {
  std::vector<size_t> s;
  for (size_t v = lo; v <= hi; v *= factor) s.push_back(v);
  return s;
}

class EveryBinary : public ::testing::TestWithParam<PerfCase> {};

// -t 2: two ranks as threads; rooted collectives use root 1.
TEST_P(EveryBinary, TwoThreadsMatchNcclTestsFormatWithNoWrongElements) {
  const PerfCase& c = GetParam();
  const std::string bin = perfBinary(c.program);
  ASSERT_TRUE(isExecutable(bin)) << bin << " is not built";
  RunResult r =
      runProgram({bin, "-t", "2", "-b", "8", "-e", "64K", "-f", "8", "-n", "4", "-w", "1", "-r", "1"}, {}, kTimeout);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  checkFrame(t, c.program, 2, false);
  std::vector<ExpectedRow> want;
  for (size_t s : factorSizes(8, 65536, 8)) want.push_back(expectRow(c, s, 4, 2, "float", "sum", 1));
  checkRows(t, c, want, false);
}

INSTANTIATE_TEST_SUITE_P(Perf, EveryBinary, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<PerfCase>& info) {
                           std::string n = info.param.program;
                           return n.substr(0, n.size() - 5);
                         });

// Three ranks: counts that do not divide evenly (AllGather and ReduceScatter round down per rank).
TEST(PerfOutput, ThreeThreadsRoundCountsLikeNcclTests) {
  for (const char* program : {"all_gather_perf", "reduce_scatter_perf", "all_reduce_perf"}) {
    SCOPED_TRACE(program);
    const PerfCase& c = caseFor(program);
    RunResult r = runProgram({perfBinary(program), "-t", "3", "-b", "4", "-e", "4100", "-i", "1000", "-d", "int8", "-o",
                              "max", "-n", "3", "-w", "1"},
                             {}, kTimeout);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    const Table t = parseTable(r.out);
    checkFrame(t, program, 3, false);
    std::vector<ExpectedRow> want;
    for (size_t s = 4; s <= 4100; s += 1000) want.push_back(expectRow(c, s, 1, 3, "int8", "max", 0));
    checkRows(t, c, want, false);
  }
}

// -d all -o all: every type, every op (PreMulSum included), in nccl-tests' order.
TEST(PerfOutput, EveryTypeAndOp) {
  const char* kTypes[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                          "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* kOps[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
  for (const char* program : {"all_reduce_perf", "reduce_scatter_perf"}) {
    SCOPED_TRACE(program);
    const PerfCase& c = caseFor(program);
    RunResult r = runProgram({perfBinary(program), "-t", "2", "-d", "all", "-o", "all", "-b", "64", "-e", "4K", "-f",
                              "64", "-n", "2", "-w", "1"},
                             {}, kTimeout);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    const Table t = parseTable(r.out);
    checkFrame(t, program, 2, false);
    std::vector<ExpectedRow> want;
    for (int ty = 0; ty < 12; ++ty)
      for (const char* op : kOps)
        for (size_t s : {64, 4096}) want.push_back(expectRow(c, s, kSizes[ty], 2, kTypes[ty], op, 0));
    checkRows(t, c, want, false);
  }
}

// -r all on a rooted collective: every root in turn.
TEST(PerfOutput, EveryRoot) {
  for (const char* program : {"reduce_perf", "gather_perf", "scatter_perf", "broadcast_perf"}) {
    SCOPED_TRACE(program);
    const PerfCase& c = caseFor(program);
    RunResult r = runProgram(
        {perfBinary(program), "-t", "3", "-r", "all", "-b", "96", "-e", "96", "-n", "2", "-w", "1"}, {}, kTimeout);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    const Table t = parseTable(r.out);
    std::vector<ExpectedRow> want;
    for (int root = 0; root < 3; ++root) want.push_back(expectRow(c, 96, 4, 3, "float", "sum", root));
    checkRows(t, c, want, false);
  }
}

// Options that change how the sweep runs, not what it prints: parallel init, a barrier after every
// operation, grouped iterations, several check iterations, each -a mode; -N repeats the rows;
// -c 0 turns #wrong into N/A.
TEST(PerfOutput, RunModes) {
  const PerfCase& c = caseFor("all_gather_perf");
  std::vector<ExpectedRow> once;
  for (size_t s : factorSizes(64, 4096, 8)) once.push_back(expectRow(c, s, 4, 2, "float", "sum", 0));
  for (const char* average : {"0", "1", "2", "3"}) {
    SCOPED_TRACE(average);
    RunResult r = runProgram({perfBinary("all_gather_perf"),
                              "-t",
                              "2",
                              "-b",
                              "64",
                              "-e",
                              "4K",
                              "-f",
                              "8",
                              "-n",
                              "3",
                              "-w",
                              "1",
                              "-p",
                              "1",
                              "-z",
                              "1",
                              "-m",
                              "3",
                              "-c",
                              "3",
                              "-N",
                              "2",
                              "-a",
                              average},
                             {}, kTimeout);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
    const Table t = parseTable(r.out);
    checkFrame(t, "all_gather_perf", 2, false);
    EXPECT_TRUE(t.hasComment("# Parallel Init Enabled: threads call into ccCommInitRank concurrently"));
    EXPECT_TRUE(t.hasComment("# Blocking Enabled: wait for completion and barrier after each collective"));
    std::vector<ExpectedRow> twice = once;
    twice.insert(twice.end(), once.begin(), once.end());
    checkRows(t, c, twice, false);
  }
  RunResult r = runProgram({perfBinary("all_gather_perf"), "-t", "2", "-b", "64", "-e", "64", "-n", "2", "-c", "0"}, {},
                           kTimeout);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][8], "N/A");
  EXPECT_EQ(t.rows[0][12], "N/A");
}

// -I 1: four per-iteration columns after each #wrong.
TEST(PerfOutput, PerIterationColumns) {
  RunResult r = runProgram(
      {perfBinary("all_reduce_perf"), "-t", "2", "-I", "1", "-b", "8", "-e", "512", "-f", "8", "-n", "5", "-w", "1"},
      {}, kTimeout);
  ASSERT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  checkFrame(t, "all_reduce_perf", 2, true);
  const auto header = t.commentsStarting("#       size ");
  ASSERT_EQ(header.size(), 1u);
  EXPECT_EQ(splitFields(header[0]),
            (std::vector<std::string>{"#",     "size",   "count", "type",  "redop", "root",  "time", "algbw",
                                      "busbw", "#wrong", "i_min", "i_p50", "i_p99", "i_max", "time", "algbw",
                                      "busbw", "#wrong", "i_min", "i_p50", "i_p99", "i_max"}));
  std::vector<ExpectedRow> want;
  for (size_t s : factorSizes(8, 512, 8))
    want.push_back(expectRow(caseFor("all_reduce_perf"), s, 4, 2, "float", "sum", 0));
  checkRows(t, caseFor("all_reduce_perf"), want, true);
  for (const auto& f : t.rows) {  // min <= p50 <= p99 <= max
    for (size_t b : {9u, 17u}) {
      EXPECT_LE(std::stod(f[b]), std::stod(f[b + 1]));
      EXPECT_LE(std::stod(f[b + 1]), std::stod(f[b + 2]));
      EXPECT_LE(std::stod(f[b + 2]), std::stod(f[b + 3]));
    }
  }
}

// -J: one JSON object per line — config, one result per row, summary — with the table unchanged.
TEST(PerfOutput, JsonLines) {
  const std::string path = ::testing::TempDir() + "perf_json_" + std::to_string(getpid()) + ".jsonl";
  RunResult r = runProgram({perfBinary("reduce_scatter_perf"), "-t", "2", "-b", "8", "-e", "4K", "-f", "8", "-n", "3",
                            "-w", "1", "-I", "1", "-J", path},
                           {}, kTimeout);
  ASSERT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  FILE* f = fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr) << path;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  fclose(f);
  unlink(path.c_str());
  const auto lines = splitLines(text);
  ASSERT_EQ(lines.size(), t.rows.size() + 2);
  std::vector<Json> recs(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_TRUE(JsonReader(lines[i]).parse(&recs[i])) << lines[i];

  const Json& cfg = recs.front();
  EXPECT_EQ(cfg.at("record").string, "config");
  EXPECT_EQ(cfg.at("program").string, "reduce_scatter_perf");
  EXPECT_EQ(cfg.at("nranks").number, 2);
  for (const char* k : {"args", "minimum_bytes", "maximum_bytes", "step_factor", "iterations", "warmup_iters",
                        "validation", "devices", "start_time"})
    EXPECT_TRUE(cfg.has(k)) << k;
  ASSERT_EQ(cfg.at("devices").array.size(), 2u);
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const Json& rec = recs[i + 1];
    EXPECT_EQ(rec.at("record").string, "result");
    EXPECT_EQ(std::to_string(static_cast<long long>(rec.at("size").number)), t.rows[i][0]);
    EXPECT_EQ(std::to_string(static_cast<long long>(rec.at("count").number)), t.rows[i][1]);
    EXPECT_EQ(rec.at("type").string, "float");
    EXPECT_EQ(rec.at("redop").string, "sum");
    EXPECT_EQ(rec.at("root").number, -1);
    for (const char* place : {"out_of_place", "in_place"}) {
      const Json& p = rec.at(place);
      for (const char* k : {"time", "alg_bw", "bus_bw", "nwrong", "p50_us", "p99_us", "min_us", "max_us"})
        EXPECT_TRUE(p.has(k)) << place << "." << k;
      EXPECT_EQ(p.at("nwrong").number, 0);
    }
  }
  const Json& sum = recs.back();
  EXPECT_EQ(sum.at("record").string, "summary");
  EXPECT_EQ(sum.at("out_of_bounds").number, 0);
  EXPECT_TRUE(sum.at("okay").boolean);
  EXPECT_TRUE(sum.has("average_bus_bandwidth"));

  // "-J -": JSON lines alone on stdout.
  RunResult j = runProgram({perfBinary("all_reduce_perf"), "-t", "2", "-b", "1K", "-e", "1K", "-n", "2", "-J", "-"}, {},
                           kTimeout);
  EXPECT_EQ(j.exitCode, 0) << j.err;
  const auto jl = splitLines(j.out);
  ASSERT_EQ(jl.size(), 3u) << j.out;
  for (const std::string& l : jl) {
    Json v;
    EXPECT_TRUE(JsonReader(l).parse(&v)) << l;
  }
}

// COLLCOMM_DEBUG=INFO: a plan line after every row, instead of one TUNING line per call.
TEST(PerfOutput, LibraryChoicePerSizeAtInfo) {
  RunResult r =
      runProgram({perfBinary("all_reduce_perf"), "-t", "2", "-b", "8", "-e", "1M", "-f", "32", "-n", "3", "-w", "1"},
                 {{"COLLCOMM_DEBUG", "INFO"}}, kTimeout);
  ASSERT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  const std::regex plan(R"(^# +(\d+) B plan: algorithm \w+, protocol (LL|Simple), \d+ channel\(s\)$)");
  const auto plans = t.commentsStarting("#  ");
  std::vector<std::string> sizes;
  for (const std::string& p : plans) {
    std::smatch m;
    if (std::regex_match(p, m, plan)) sizes.push_back(m[1]);
  }
  ASSERT_EQ(sizes.size(), t.rows.size()) << r.out;
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], t.rows[i][0]);
  EXPECT_EQ(r.err.find("algorithm Ring, protocol"), std::string::npos) << "per-call TUNING lines leaked to stderr";
  EXPECT_NE(r.err.find("COLLCOMM_DEBUG=INFO"), std::string::npos) << "other INFO lines must still reach stderr";
}

TEST(PerfOutput, BadOptionsAreUsageErrors) {
  const std::vector<std::vector<std::string>> bad = {
      {"-x", "1"},    {"-d", "float128"}, {"-o", "xor"},  {"-b", "1M", "-e", "1K"},
      {"-t", "0"},    {"-g", "2"},        {"-b", "12Q"},  {"extra"},
      {"-a", "7"},    {"--nosuch"},       {"--gpu", "x"}, {"--gpu"},
      {"--gpu", "-1"}};
  for (const auto& args : bad) {
    std::vector<std::string> argv = {perfBinary("all_reduce_perf")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = runProgram(argv, {}, kTimeout);
    SCOPED_TRACE(args[0]);
    EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("all_reduce_perf: "), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("# Out of bounds"), std::string::npos);
  }
  RunResult h = runProgram({perfBinary("all_reduce_perf"), "-h"}, {}, kTimeout);
  EXPECT_EQ(h.exitCode, 0);
  for (const char* opt :
       {"-t,--nthreads",      "-g,--ngpus",     "-b,--minbytes",  "-e,--maxbytes",     "-i,--stepbytes",
        "-f,--stepfactor",    "-n,--iters",     "-m,--agg_iters", "-w,--warmup_iters", "-N,--run_cycles",
        "-p,--parallel_init", "-c,--check",     "-o,--op",        "-d,--datatype",     "-r,--root",
        "-z,--blocking",      "-T,--timeout",   "-a,--average",   "-J,--output_file",  "-I,--per_iter_timing",
        "-h,--help",          "--gpu <ordinal>"})
    EXPECT_NE(h.out.find(opt), std::string::npos) << opt;
}

// --gpu names a device this process cannot use (no CUDA in the build, no driver, or no device
// 1023): a sentence and status 2 before any rank starts, never a crash.
TEST(PerfOutput, GpuOptionWithoutThatDeviceIsRefusedWithASentence) {
  RunResult r =
      runProgram({perfBinary("all_reduce_perf"), "--gpu", "1023", "-t", "2", "-b", "8", "-e", "8"}, {}, kTimeout);
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("all_reduce_perf: --gpu 1023: "), std::string::npos) << r.err;
  const bool said = r.err.find("this build has no CUDA") != std::string::npos ||
                    r.err.find("no usable CUDA device") != std::string::npos ||
                    r.err.find("CUDA device 1023 does not exist") != std::string::npos;
  EXPECT_TRUE(said) << r.err;
  EXPECT_EQ(r.out.find("# Out of bounds"), std::string::npos) << r.out;
}

// Broken results must show: one flipped bit per result, and operations that do nothing at all
// (a stale buffer must not pass, so inputs and places change between iterations).
TEST(PerfOutput, WrongResultsAreCountedAndFailTheRun) {
  const std::string lib = perfBinary("libcc_perf_fault.so");
  ASSERT_TRUE(access(lib.c_str(), R_OK) == 0) << lib;
  const char* asan = getenv("ASAN_OPTIONS");
  const std::string asanOpts = std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0";
  for (const char* mode : {"corrupt", "skip"}) {
    SCOPED_TRACE(mode);
    RunResult r = runProgram({perfBinary("all_reduce_perf"), "-t", "2", "-b", "1K", "-e", "4K", "-f", "4", "-d",
                              "int32", "-n", "2", "-w", "1", "-c", "2"},
                             {{"LD_PRELOAD", lib}, {"CC_PERF_FAULT", mode}, {"ASAN_OPTIONS", asanOpts}}, kTimeout);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    const Table t = parseTable(r.out);
    ASSERT_EQ(t.rows.size(), 2u) << r.out << r.err;
    for (const auto& f : t.rows) {
      EXPECT_NE(f[8], "0");
      EXPECT_NE(f[12], "0");
      EXPECT_GT(std::stoll(f[8]), 0);
    }
    const auto oob = t.commentsStarting("# Out of bounds values : ");
    ASSERT_EQ(oob.size(), 1u);
    EXPECT_NE(oob[0].find("FAILED"), std::string::npos) << oob[0];
    EXPECT_NE(r.err.find("wrong element(s)"), std::string::npos);
  }
}

}  // namespace
}  // namespace collcomm::test
