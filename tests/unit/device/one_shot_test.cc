// The portable one-shot AllReduce on any number of ranks (collectives/one_shot_all_reduce.h,
// oneShotAllReduceAny) on host threads joined by a mesh of FIFOs (peer_mesh.h): run directly over
// HostPlatform for every data type and reduction, and through the host executor's run() as core
// drives it. Results are checked exactly (crafted inputs, support/exact_data.h), bit for bit
// between ranks, and, on inputs whose sum depends on the order, against the rank-order reduction
// computed element by element here (what the host-only algorithm computed before it was portable).
#include <gtest/gtest.h>

#include <barrier>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/one_shot_all_reduce.h"
#include "device/host/host_dispatch.h"
#include "device/op_arg.h"
#include "peer_mesh.h"
#include "support/coll_check.h"
#include "support/exact_data.h"

namespace collcomm::detail {
namespace {

using test::PeerMesh;
using test::TestBuffer;

// The algorithm over HostPlatform with this test's scratch, as host_one_shot.cc runs it.
struct RunOneShot {
  template <class T, class Fn>
  static Status run(const OneShotWork& w, uint64_t opArg, const HostWaitContext& ctx) {
    HostPlatform plat(ctx);
    const Fn fn(opArg);
    const bool done = oneShotAllReduceAny<T>(plat, fn, w);
    EXPECT_EQ(done, isOk(plat.status()));
    return plat.status();
  }
};

RedOpSpec opSpec(int op, ccDataType_t t, int n) {
  if (op >= 0) return makeOpArg(static_cast<ccRedOp_t>(op), t, n);
  std::vector<char> scalar(dtypeSize(t));
  test::storeValue(t, scalar.data(), test::kPreMulScalar);
  return makePreMulSumOpArg(t, scalar.data());
}

// Every rank's scratch for one mesh.
struct RankScratch {
  std::vector<char> gather;
  std::vector<ExecTransfer> transfers;
};

Status runDirect(const PeerMesh& mesh, int rank, RankScratch& s, const void* in, void* out, size_t count,
                 ccDataType_t t, RedOpSpec op) {
  const int n = mesh.size();
  s.gather.assign(count * dtypeSize(t) * n + 1, 0);
  s.transfers.assign(2 * static_cast<size_t>(n - 1), ExecTransfer{});
  // One byte past the allocation's start: the algorithm must not need aligned scratch.
  // Every rank is given the same reduction argument (ownPreOp false, as for a built-in op).
  const OneShotWork w{in,
                      out,
                      count,
                      rank,
                      n,
                      mesh.peers(rank),
                      s.gather.data() + 1,
                      s.transfers.data(),
                      false,
                      callTagOf(CollKind::kAllReduce, t, op.kind, 0)};
  const HostWaitContext ctx = mesh.waitContext(rank, "AllReduce");
  return dispatchReduction<RunOneShot>(t, op.kind, w, op.opArg, ctx);
}

// n = 2, 3, 4, 5 ranks x every data type x SUM, PROD, MAX, MIN, AVG, PreMulSum x counts 0, 1, odd,
// several FIFOs' worth x in place and out of place: the exact result on every rank, and the same
// bits on all of them. One mesh per rank count: its FIFOs carry case after case, as a
// communicator's do.
TEST(OneShotAny, ExactForEveryTypeAndReductionOnTwoToFiveRanks) {
  const int ops[] = {ccSum, ccProd, ccMax, ccMin, ccAvg, -1};
  const size_t counts[] = {0, 1, 37, 1001, 4099};
  for (int n = 2; n <= 5; ++n) {
    PeerMesh mesh(n);
    std::vector<std::unique_ptr<TestBuffer>> send(n), recv(n);
    std::vector<RankScratch> scratch(n);
    std::vector<std::string> errors(n);
    std::barrier sync(n);
    size_t cases = 0;
    const auto s = mesh.onAll(
        [&](int r) {
          for (int ti = 0; ti < ccNumTypes; ++ti)
            for (int op : ops)
              for (size_t count : counts)
                for (int inPlace = 0; inPlace < 2; ++inPlace) {
                  const auto t = static_cast<ccDataType_t>(ti);
                  const size_t e = dtypeSize(t);
                  send[r] = std::make_unique<TestBuffer>(count, e);
                  recv[r] = std::make_unique<TestBuffer>(count, e);
                  test::fillInputs(op, t, r, send[r]->data(), count);
                  void* out = inPlace ? send[r]->data() : recv[r]->data();
                  const test::CaseSpec spec{test::Coll::kAllReduce, t, op, count, inPlace != 0, 0};
                  const Status st = runDirect(mesh, r, scratch[r], send[r]->data(), out, count, t, opSpec(op, t, n));
                  std::string first;
                  if (!isOk(st)) {
                    errors[r] += test::describe(spec, n, r) + ": " + threadLastError() + "\n";
                  } else if (const size_t wrong = test::countWrong(op, t, n, out, count, 0, &first)) {
                    errors[r] += test::describe(spec, n, r) + ": " + std::to_string(wrong) + " wrong, " + first + "\n";
                  }
                  sync.arrive_and_wait();  // every result written
                  if (r == 0) {
                    ++cases;
                    for (int p = 1; p < n; ++p) {
                      const void* theirs = inPlace ? send[p]->data() : recv[p]->data();
                      if (memcmp(out, theirs, count * e) != 0)
                        errors[0] += test::describe(spec, n, p) + ": bits differ from rank 0's\n";
                    }
                  }
                  sync.arrive_and_wait();  // compared before the buffers go
                }
          return kOk;
        },
        "one-shot AllReduce sweep");
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << n << " ranks, rank " << r;
    EXPECT_EQ(cases, static_cast<size_t>(ccNumTypes) * 6 * 5 * 2);
  }
}

// Inputs whose floating sum depends on the order of its operands (values of very different
// magnitudes): every rank gets bit for bit the rank-order reduction computed element by element
// here with the same functor, ((x0 (+) x1) (+) x2) ..., which is what the host-only algorithm
// before this one computed; and the reverse order gives other bits on some elements, so the check
// has teeth.
template <class T, class Fn>
void checkRankOrder(int n, uint64_t opArg, ccDataType_t t) {
  SCOPED_TRACE(std::string(dtypeName(t)) + " on " + std::to_string(n) + " ranks");
  const size_t count = 3001;
  std::vector<std::vector<T>> in(n, std::vector<T>(count)), out(n, std::vector<T>(count));
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      const double mantissa = 1.0 + std::ldexp(static_cast<double>(seed >> 11), -53);
      const int exponent = static_cast<int>((seed >> 20) % 24) - 12;
      in[r][i] = fromDouble<T>(((seed >> 8) & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent));
    }
  const Fn fn(opArg);
  std::vector<T> want(count), reversed(count);
  for (size_t i = 0; i < count; ++i) {
    T acc = fn.reduce(fn.preOp(in[0][i]), fn.preOp(in[1][i]));
    for (int r = 2; r < n; ++r) acc = fn.reduce(acc, fn.preOp(in[r][i]));
    want[i] = fn.postOp(acc);
    T rev = fn.reduce(fn.preOp(in[n - 1][i]), fn.preOp(in[n - 2][i]));
    for (int r = n - 3; r >= 0; --r) rev = fn.reduce(rev, fn.preOp(in[r][i]));
    reversed[i] = fn.postOp(rev);
  }
  if (n > 2) {
    EXPECT_NE(memcmp(want.data(), reversed.data(), count * sizeof(T)), 0) << "the inputs do not test order";
  }
  PeerMesh mesh(n);
  std::vector<RankScratch> scratch(n);
  const auto s = mesh.onAll([&](int r) {
    return runDirect(mesh, r, scratch[r], in[r].data(), out[r].data(), count, t, RedOpSpec{RedOpKind::kSum, opArg});
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(isOk(s[r])) << threadLastError();
    EXPECT_EQ(memcmp(out[r].data(), want.data(), count * sizeof(T)), 0) << "rank " << r;
  }
}

TEST(OneShotAny, EveryRankGetsTheRankOrderBitsOnOrderSensitiveInputs) {
  for (int n = 2; n <= 5; ++n) {
    checkRankOrder<float, FuncSum<float>>(n, 0, ccFloat32);
    checkRankOrder<double, FuncSum<double>>(n, 0, ccFloat64);
    checkRankOrder<Half, FuncSum<Half>>(n, 0, ccFloat16);
    checkRankOrder<Bfloat16, FuncSum<Bfloat16>>(n, 0, ccBfloat16);
  }
}

// Through the executor interface, as core hands it over (ExecColl with the per-peer connections):
// the host glue's scratch grows with the message and is reused; in place and out of place.
TEST(OneShotAny, RunsThroughTheHostExecutorOnMoreThanTwoRanks) {
  for (int n = 3; n <= 5; ++n) {
    PeerMesh mesh(n);
    for (size_t count : {size_t{1}, size_t{1001}, size_t{100003}, size_t{7}}) {
      for (bool inPlace : {false, true}) {
        SCOPED_TRACE(std::to_string(n) + " ranks, count " + std::to_string(count) + (inPlace ? " in place" : ""));
        std::vector<std::vector<float>> in(n), out(n);
        for (int r = 0; r < n; ++r) {
          in[r].resize(count);
          out[r].assign(count, -1.0f);
          for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i % 97) * (r + 1));
        }
        const auto s = mesh.onAll([&](int r) {
          float* dst = inPlace ? in[r].data() : out[r].data();
          ExecColl coll{CollKind::kAllReduce,
                        Algorithm::kOneShot,
                        Protocol::kSimple,
                        ccFloat32,
                        makeOpArg(ccSum, ccFloat32, n),
                        in[r].data(),
                        dst,
                        count,
                        0,
                        1};
          coll.peers = mesh.peers(r);
          ExecFailure failure;
          ExecOp op;
          op.name = "AllReduce";
          op.failure = &failure;
          return mesh.exec(r).run(coll, op);
        });
        const float factor = static_cast<float>(n * (n + 1) / 2);
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(isOk(s[r])) << threadLastError();
          const std::vector<float>& got = inPlace ? in[r] : out[r];
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], static_cast<float>(i % 97) * factor) << "rank " << r;
        }
      }
    }
  }
}

// A rank that never comes: the others fail (here: the abort the user raised), never hang, and say
// so through the platform's status.
TEST(OneShotAny, AMissingRankFailsTheOthersInsteadOfHanging) {
  PeerMesh mesh(3);
  mesh.abortFlag.store(1);
  std::vector<float> in(100, 1.0f), out[2] = {std::vector<float>(100), std::vector<float>(100)};
  std::vector<Status> s(2, kOk);
  {
    test::Watchdog dog(60, "one-shot AllReduce without its third rank");
    auto one = [&](int r) {
      ExecColl coll{CollKind::kAllReduce,
                    Algorithm::kOneShot,
                    Protocol::kSimple,
                    ccFloat32,
                    makeOpArg(ccSum, ccFloat32, 3),
                    in.data(),
                    out[r].data(),
                    in.size(),
                    0,
                    1};
      coll.peers = mesh.peers(r);
      ExecOp op;
      op.name = "AllReduce";
      return mesh.exec(r).run(coll, op);
    };
    std::thread other([&] { s[1] = one(1); });
    s[0] = one(0);
    other.join();
  }
  EXPECT_FALSE(isOk(s[0]));
  EXPECT_FALSE(isOk(s[1]));
}

}  // namespace
}  // namespace collcomm::detail
