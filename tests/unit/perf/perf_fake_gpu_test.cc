// The perf binaries' --gpu path (device buffers, a stream per rank, fills and checks staged
// through host memory, a wait and ccCommGetAsyncError after each loop) on machines without a GPU:
// the *_perf_fakegpu binaries link perf/testing/fake_gpu.cc (host memory as the "device") instead
// of common/gpu.cc, and run under perf/testing/fake_gpu_shim.c, which makes their communicators
// host ones and aborts unless every rank asks for device 0 and passes its own stream. The real
// device path is measured by scripts/gpu_check.sh on a machine with a GPU.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "perf_run.h"

namespace collcomm::test {
namespace {

constexpr int kTimeout = 90;  // seconds per child; sanitizer builds are slow

std::vector<std::pair<std::string, std::string>> fakeGpuEnv(const std::string& extraPreload = "") {
  const std::string shim = perfBinary("libcc_perf_fake_gpu_shim.so");
  const char* asan = getenv("ASAN_OPTIONS");
  return {{"LD_PRELOAD", extraPreload.empty() ? shim : shim + " " + extraPreload},
          {"ASAN_OPTIONS", std::string(asan != nullptr ? asan : "") + ":verify_asan_link_order=0"}};
}

RunResult runFake(const std::string& program, std::vector<std::string> args,
                  std::vector<std::pair<std::string, std::string>> env = fakeGpuEnv()) {
  std::vector<std::string> argv = {perfBinary(program), "--gpu", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProgram(argv, env, kTimeout);
}

// Exit 0, every row checked with 0 wrong elements, and the report names the device.
void expectClean(const RunResult& r, int nranks) {
  ASSERT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 0) << r.out << r.err;
  const Table t = parseTable(r.out);
  ASSERT_FALSE(t.rows.empty()) << r.out << r.err;
  for (const auto& f : t.rows) {
    ASSERT_GE(f.size(), 13u);
    EXPECT_EQ(f[8], "0") << r.out;
    EXPECT_EQ(f[12], "0") << r.out;
  }
  const std::string ranks = "# GPU ranks: 1 process(es) x " + std::to_string(nranks) +
                            " thread(s) = " + std::to_string(nranks) +
                            " rank(s), each on CUDA device 0, fake GPU (host memory)";
  EXPECT_EQ(t.commentsStarting(ranks).size(), 1u) << r.out;
  const auto devices = t.commentsStarting("#  Rank ");
  EXPECT_EQ(devices.size(), static_cast<size_t>(nranks)) << r.out;
  for (const std::string& d : devices) EXPECT_NE(d.find(" device     0 "), std::string::npos) << d;
  const auto oob = t.commentsStarting("# Out of bounds values : ");
  ASSERT_EQ(oob.size(), 1u) << r.out;
  EXPECT_NE(oob[0].find("OK"), std::string::npos) << oob[0];
}

TEST(PerfFakeGpu, FirstStepCollectivesCheckEveryTypeThroughStaging) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"all_reduce_perf_fakegpu", {"-o", "all"}},     {"all_gather_perf_fakegpu", {}},
      {"reduce_scatter_perf_fakegpu", {"-o", "all"}}, {"broadcast_perf_fakegpu", {"-r", "all"}},
      {"reduce_perf_fakegpu", {"-r", "all"}},
  };
  for (const auto& [program, extra] : cases) {
    SCOPED_TRACE(program);
    std::vector<std::string> args = {"-t", "3", "-b", "8", "-e", "64K", "-f", "8",
                                     "-n", "3", "-w", "1", "-c", "2",   "-d", "all"};
    args.insert(args.end(), extra.begin(), extra.end());
    expectClean(runFake(program, args), 3);
  }
}

TEST(PerfFakeGpu, RunModes) {
  const std::vector<std::vector<std::string>> modes = {{"-p", "1"}, {"-T", "30"}, {"-z", "1"},
                                                       {"-I", "1"}, {"-m", "3"},  {"-N", "2"}};
  for (const auto& mode : modes) {
    SCOPED_TRACE(mode[0]);
    std::vector<std::string> args = {"-t", "2", "-b", "1K", "-e", "16K", "-f", "4", "-n", "4", "-w", "1"};
    args.insert(args.end(), mode.begin(), mode.end());
    RunResult r = runFake("all_reduce_perf_fakegpu", args);
    if (mode[0] == std::string("-I")) {
      // Four more columns per variant: #wrong moves to fields 8 and 16.
      ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
      for (const auto& f : parseTable(r.out).rows) {
        ASSERT_GE(f.size(), 21u);
        EXPECT_EQ(f[8], "0");
        EXPECT_EQ(f[16], "0");
      }
    } else {
      expectClean(r, 2);
    }
  }
}

// A corrupted or skipped result must show even though every check goes through host staging.
TEST(PerfFakeGpu, WrongResultsAreCountedThroughStaging) {
  const std::string fault = perfBinary("libcc_perf_fault.so");
  for (const char* mode : {"corrupt", "skip"}) {
    SCOPED_TRACE(mode);
    auto env = fakeGpuEnv(fault);
    env.emplace_back("CC_PERF_FAULT", mode);
    RunResult r =
        runFake("all_reduce_perf_fakegpu",
                {"-t", "2", "-b", "1K", "-e", "4K", "-f", "4", "-d", "int32", "-n", "2", "-w", "1", "-c", "2"}, env);
    ASSERT_FALSE(r.timedOut);
    EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
    const Table t = parseTable(r.out);
    ASSERT_EQ(t.rows.size(), 2u) << r.out << r.err;
    for (const auto& f : t.rows) {
      EXPECT_GT(std::stoll(f[8]), 0) << r.out;
      EXPECT_GT(std::stoll(f[12]), 0) << r.out;
    }
    const auto oob = t.commentsStarting("# Out of bounds values : ");
    ASSERT_EQ(oob.size(), 1u);
    EXPECT_NE(oob[0].find("FAILED"), std::string::npos) << oob[0];
  }
}

// A kernel failure (ccCommGetAsyncError after a loop) stops the run with the library's verdict.
TEST(PerfFakeGpu, AsyncErrorStopsTheRunWithASentence) {
  auto env = fakeGpuEnv();
  env.emplace_back("CC_FAKE_GPU_ASYNC_ERROR", "1");
  RunResult r = runFake("all_reduce_perf_fakegpu", {"-t", "2", "-b", "8", "-e", "8"}, env);
  ASSERT_FALSE(r.timedOut);
  EXPECT_EQ(r.exitCode, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("after the warm-up the communicator reports "), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("# Out of bounds"), std::string::npos) << r.out;
}

TEST(PerfFakeGpu, AnotherDeviceIsRefusedBeforeAnyRankStarts) {
  RunResult r = runProgram({perfBinary("all_reduce_perf_fakegpu"), "--gpu", "1", "-t", "2"}, fakeGpuEnv(), kTimeout);
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("all_reduce_perf: --gpu 1: CUDA device 1 does not exist"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace collcomm::test
