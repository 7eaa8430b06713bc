// PreMulSum with a scalar of each rank's own (NCCL's meaning: the result is the sum over ranks of
// scalar_r * input_r): every algorithm that reduces, forced in turn on thread ranks, must apply
// each rank's scalar to that rank's input alone. The one-shot AllReduce beyond two ranks and Direct
// once applied the reducing rank's scalar to every input (a review on 2026-11-29 found it; the
// tests with one scalar for all ranks could not see it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

enum class Kind { kAllReduce, kReduceScatter, kReduce };

// Rank r's input element i: small integers, so that every sum of scalar * input is exact in float.
float inputOf(int r, size_t i) { return static_cast<float>((r + 1) * 10 + static_cast<int>(i % 7)); }
// Rank r's scalar: a power of two, through ccScalarHostImmediate or a pointer (ccScalarDevice on a
// host communicator: read when the operation runs).
float scalarOf(int r) { return static_cast<float>(1 << r); }

// n thread ranks with COLLCOMM_ALGO=algo run `kind` of `count` elements with each rank's own
// PreMulSum scalar; "" or the first wrong element.
std::string run(const char* algo, int n, Kind kind, size_t count, ccScalarResidence_t residence) {
  setenv("COLLCOMM_ALGO", algo, 1);
  std::vector<ccComm_t> comms(n);
  const ccResult_t made = ccCommInitAll(comms.data(), n, nullptr);
  unsetenv("COLLCOMM_ALGO");
  if (made != ccSuccess) return std::string("ccCommInitAll: ") + ccGetLastError(nullptr);
  const size_t sendCount = kind == Kind::kReduceScatter ? count * n : count;
  std::vector<std::vector<float>> send(n), recv(n);
  std::vector<float> scalars(n);
  std::vector<ccRedOp_t> ops(n);
  std::string failure;
  for (int r = 0; r < n && failure.empty(); ++r) {
    send[r].resize(sendCount);
    for (size_t i = 0; i < sendCount; ++i) send[r][i] = inputOf(r, i);
    recv[r].assign(count, -1.0f);
    scalars[r] = scalarOf(r);
    if (ccRedOpCreatePreMulSum(&ops[r], &scalars[r], ccFloat32, residence, comms[r]) != ccSuccess)
      failure = std::string("ccRedOpCreatePreMulSum: ") + ccGetLastError(comms[r]);
  }
  if (failure.empty()) {
    ccGroupStart();
    for (int r = 0; r < n; ++r) {
      switch (kind) {
        case Kind::kAllReduce:
          ccAllReduce(send[r].data(), recv[r].data(), count, ccFloat32, ops[r], comms[r], nullptr);
          break;
        case Kind::kReduceScatter:
          ccReduceScatter(send[r].data(), recv[r].data(), count, ccFloat32, ops[r], comms[r], nullptr);
          break;
        case Kind::kReduce:
          ccReduce(send[r].data(), recv[r].data(), count, ccFloat32, ops[r], n - 1, comms[r], nullptr);
          break;
      }
    }
    if (ccGroupEnd() != ccSuccess) failure = std::string("the collective failed: ") + ccGetLastError(nullptr);
  }
  for (int r = 0; r < n && failure.empty(); ++r) {
    if (kind == Kind::kReduce && r != n - 1) continue;
    const size_t first = kind == Kind::kReduceScatter ? count * r : 0;
    for (size_t i = 0; i < count && failure.empty(); ++i) {
      float want = 0;
      for (int p = 0; p < n; ++p) want += scalarOf(p) * inputOf(p, first + i);
      if (recv[r][i] != want)
        failure = "rank " + std::to_string(r) + " element " + std::to_string(i) + ": " + std::to_string(recv[r][i]) +
                  " where the sum of each rank's scalar times its input is " + std::to_string(want);
    }
  }
  for (int r = 0; r < n; ++r) {
    ccRedOpDestroy(ops[r], comms[r]);
    ccCommDestroy(comms[r]);
  }
  return failure;
}

TEST(PreMulSumPerRank, EveryAlgorithmAppliesEachRanksOwnScalar) {
  Watchdog dog(240, "PreMulSumPerRank");
  struct Case {
    const char* algo;
    Kind kind;
  };
  const Case cases[] = {{"Ring", Kind::kAllReduce},   {"Tree", Kind::kAllReduce},     {"OneShot", Kind::kAllReduce},
                        {"Direct", Kind::kAllReduce}, {"Ring", Kind::kReduceScatter}, {"Direct", Kind::kReduceScatter},
                        {"Ring", Kind::kReduce}};
  for (const Case& c : cases)
    for (int n : {2, 3, 5})
      // Direct's reductions go in chunks of 256 KiB over all operands: 70001 floats take several.
      for (size_t count : {size_t{1}, size_t{1000}, size_t{70001}})
        for (ccScalarResidence_t residence : {ccScalarHostImmediate, ccScalarDevice})
          EXPECT_EQ(run(c.algo, n, c.kind, count, residence), "")
              << c.algo << " " << static_cast<int>(c.kind) << " on " << n << " ranks, count " << count
              << (residence == ccScalarDevice ? ", scalar by pointer" : "");
}

}  // namespace
}  // namespace collcomm::test
