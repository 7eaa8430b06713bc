// The portable Direct algorithm (collectives/direct.h) through the host executor's run(), as core
// drives it, on host threads joined by a mesh of FIFOs (peer_mesh.h): peers read through plain
// pointers (threads of one process) and, with the executors told every peer is another process,
// through cross-memory attach (the same process's pid: every read and write is a
// process_vm_readv/writev). Results are exact (support/exact_data.h), the same bits on every
// rank, and on order-sensitive inputs the rank-order reduction computed element by element here.
#include "collectives/direct.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device/op_arg.h"
#include "peer_mesh.h"
#include "support/coll_check.h"
#include "support/exact_data.h"
#include "transport/cma/peer_memory.h"

namespace collcomm::detail {
namespace {

using test::PeerMesh;
using test::TestBuffer;

RedOpSpec opSpec(int op, ccDataType_t t, int n) {
  if (op >= 0) return makeOpArg(static_cast<ccRedOp_t>(op), t, n);
  std::vector<char> scalar(dtypeSize(t));
  test::storeValue(t, scalar.data(), test::kPreMulScalar);
  return makePreMulSumOpArg(t, scalar.data());
}

// Whether this process may read itself with process_vm_readv (a sandbox may forbid it).
// Rank r's Direct collective over the mesh's connections, as core hands it to the executor.
ExecColl directColl(PeerMesh& mesh, int r, CollKind kind, ccDataType_t t, int op, const void* in, void* out,
                    size_t count, int root = 0) {
  ExecColl coll{kind, Algorithm::kDirect, Protocol::kSimple, t, opSpec(op, t, mesh.size()), in, out, count, root, 1};
  coll.builtinOp = op;
  coll.peers = mesh.peers(r);
  return coll;
}

bool selfCmaWorks(std::string* why) {
  int src = 42, dst = 0;
  const int err = tryReadProcess(static_cast<int>(getpid()), &src, &dst, sizeof(src));
  if (err == 0 && dst == 42) return true;
  *why = std::string("process_vm_readv on this process failed: ") + strerror(err);
  return false;
}

struct Case {
  CollKind kind;
  ccDataType_t dtype;
  int op;  // ccRedOp_t, or -1 for PreMulSum
  size_t count;
  bool inPlace;
  int root;
};

std::string describe(const Case& c, int n, bool cross) {
  return std::string(collName(c.kind)) + " " + dtypeName(c.dtype) + " op " + std::to_string(c.op) + " count " +
         std::to_string(c.count) + (c.inPlace ? " in place" : "") + " root " + std::to_string(c.root) + " on " +
         std::to_string(n) + (cross ? " processes (cross-memory attach)" : " threads");
}

// Runs one case on every rank of the mesh and returns "" or what was wrong.
std::string runCase(PeerMesh& mesh, const Case& c, bool cross, bool streamResults = false) {
  const int n = mesh.size();
  const size_t e = dtypeSize(c.dtype);
  const size_t sendElems = c.kind == CollKind::kReduceScatter ? c.count * n : c.count;
  const size_t recvElems = c.kind == CollKind::kAllGather ? c.count * n : c.count;
  std::vector<std::unique_ptr<TestBuffer>> send(n), recv(n);
  std::vector<char*> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    send[r] = std::make_unique<TestBuffer>(std::max(sendElems, recvElems), e);
    recv[r] = std::make_unique<TestBuffer>(recvElems, e);
    const int fillOp = c.op;
    if (c.kind == CollKind::kAllGather && c.inPlace) {
      out[r] = send[r]->data();
      in[r] = out[r] + c.count * e * r;
    } else if (c.kind == CollKind::kReduceScatter && c.inPlace) {
      in[r] = send[r]->data();
      out[r] = in[r] + c.count * e * r;
    } else {
      in[r] = send[r]->data();
      out[r] = c.inPlace ? in[r] : recv[r]->data();
    }
    test::fillInputs(fillOp, c.dtype, r, in[r], sendElems);
  }
  std::vector<ExecFailure> failures(n);
  const auto s = mesh.onAll([&](int r) {
    ExecColl coll = directColl(mesh, r, c.kind, c.dtype, c.op, in[r], out[r], c.count, c.root);
    coll.streamResults = streamResults;
    ExecOp op;
    op.name = collName(c.kind);
    op.failure = &failures[r];
    return mesh.exec(r).run(coll, op);
  });
  std::string errors;
  const std::string what = describe(c, n, cross);
  for (int r = 0; r < n; ++r) {
    if (!isOk(s[r])) return what + ": rank " + std::to_string(r) + " failed";
    std::string first;
    size_t wrong = 0;
    switch (c.kind) {
      case CollKind::kAllReduce:
        wrong = test::countWrong(c.op, c.dtype, n, out[r], c.count, 0, &first);
        break;
      case CollKind::kReduceScatter:
        wrong = test::countWrong(c.op, c.dtype, n, out[r], c.count, c.count * r, &first);
        break;
      case CollKind::kAllGather: {
        std::vector<char> want(c.count * e);
        for (int p = 0; p < n; ++p) {
          test::fillInputs(c.op, c.dtype, p, want.data(), c.count);
          if (!want.empty() && memcmp(out[r] + c.count * e * p, want.data(), want.size()) != 0)
            ++wrong, first = "block " + std::to_string(p);
        }
        break;
      }
      default: {
        std::vector<char> want(c.count * e);
        test::fillInputs(c.op, c.dtype, c.root, want.data(), c.count);
        if (!want.empty() && memcmp(out[r], want.data(), want.size()) != 0) ++wrong, first = "the root's data differs";
        break;
      }
    }
    if (wrong != 0)
      errors += what + ": rank " + std::to_string(r) + ": " + std::to_string(wrong) + " wrong, " + first + "\n";
    if (c.kind == CollKind::kAllReduce && c.count != 0 && memcmp(out[r], out[0], c.count * e) != 0)
      errors += what + ": rank " + std::to_string(r) + "'s bits differ from rank 0's\n";
  }
  return errors;
}

void sweep(bool cross) {
  const CollKind kinds[] = {CollKind::kAllGather, CollKind::kBroadcast, CollKind::kReduceScatter, CollKind::kAllReduce};
  const int ops[] = {ccSum, ccProd, ccMax, ccMin, ccAvg, -1};
  const size_t counts[] = {0, 1, 37, 1001};
  for (int n = 2; n <= 5; ++n) {
    PeerMesh mesh(n, cross);
    for (CollKind kind : kinds)
      for (int ti = 0; ti < ccNumTypes; ++ti)
        for (int op : ops) {
          const bool reduces = kind == CollKind::kAllReduce || kind == CollKind::kReduceScatter;
          if (!reduces && op != ccSum) continue;  // data moves: the op plays no part
          for (size_t count : counts)
            for (bool inPlace : {false, true})
              for (int root : {0, n - 1}) {
                if (kind != CollKind::kBroadcast && root != 0) continue;
                const Case c{kind, static_cast<ccDataType_t>(ti), op, count, inPlace, root};
                EXPECT_EQ(runCase(mesh, c, cross), "");
              }
        }
    // Several reduction chunks (directChunkBytes), AllReduce blocks of uneven size, and results
    // written with streaming stores.
    for (CollKind kind : kinds)
      for (bool inPlace : {false, true}) {
        const Case c{kind, ccFloat32, ccSum, 300007, inPlace, n - 1};
        EXPECT_EQ(runCase(mesh, c, cross), "");
        EXPECT_EQ(runCase(mesh, c, cross, /*streamResults=*/true), "") << "streaming results";
      }
  }
}

TEST(DirectAlgo, EveryCollectiveExactOnTwoToFiveThreadRanks) { sweep(false); }

TEST(DirectAlgo, EveryCollectiveExactThroughCrossMemoryAttach) {
  std::string why;
  if (!selfCmaWorks(&why)) GTEST_SKIP() << why;
  sweep(true);
}

// Order-sensitive inputs: AllReduce and ReduceScatter give every rank the rank-order reduction
// ((x0 + x1) + x2) ... computed here element by element, over plain pointers and over copies.
TEST(DirectAlgo, ReductionsFollowRankOrderOnOrderSensitiveInputs) {
  std::string why;
  const bool cma = selfCmaWorks(&why);
  for (bool cross : {false, true}) {
    if (cross && !cma) continue;
    for (int n = 3; n <= 5; ++n) {
      PeerMesh mesh(n, cross);
      const size_t count = 70001;
      for (CollKind kind : {CollKind::kAllReduce, CollKind::kReduceScatter}) {
        SCOPED_TRACE(std::string(collName(kind)) + " on " + std::to_string(n) + (cross ? " processes" : " threads"));
        const size_t sendElems = kind == CollKind::kReduceScatter ? count * n : count;
        std::vector<std::vector<double>> in(n, std::vector<double>(sendElems)), out(n, std::vector<double>(count));
        uint64_t seed = 0x9e3779b97f4a7c15ull;
        for (int r = 0; r < n; ++r)
          for (double& x : in[r]) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            x = ((seed >> 8) & 1 ? -1.0 : 1.0) * std::ldexp(1.0 + std::ldexp(static_cast<double>(seed >> 11), -53),
                                                            static_cast<int>((seed >> 20) % 24) - 12);
          }
        const auto s = mesh.onAll([&](int r) {
          const ExecColl coll = directColl(mesh, r, kind, ccFloat64, ccSum, in[r].data(), out[r].data(), count);
          ExecOp op;
          op.name = collName(kind);
          return mesh.exec(r).run(coll, op);
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(isOk(s[r])) << threadLastError();
          const size_t base = kind == CollKind::kReduceScatter ? count * r : 0;
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            double acc = in[0][base + i] + in[1][base + i];
            for (int p = 2; p < n; ++p) acc += in[p][base + i];
            wrong += memcmp(&acc, &out[r][i], sizeof(double)) != 0;
          }
          EXPECT_EQ(wrong, 0u) << "rank " << r;
        }
      }
    }
  }
}

// Ranks whose calls differ: every rank refuses with the sentence, moves no data, and blames itself
// (so core tells the peers); the communicator's FIFOs stay usable for the next call.
TEST(DirectAlgo, RanksWhoseCallsDifferAreToldNotReduced) {
  PeerMesh mesh(3);
  std::vector<std::vector<float>> in(3, std::vector<float>(64, 1.0f)), out(3, std::vector<float>(64, -1.0f));
  std::vector<ExecFailure> failures(3);
  std::vector<std::string> messages(3);
  const auto s = mesh.onAll([&](int r) {
    const size_t count = r == 1 ? 63 : 64;
    const ExecColl coll =
        directColl(mesh, r, CollKind::kAllReduce, ccFloat32, ccSum, in[r].data(), out[r].data(), count);
    ExecOp op;
    op.name = "AllReduce";
    op.failure = &failures[r];
    const Status st = mesh.exec(r).run(coll, op);
    messages[r] = threadLastError();
    return st;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(s[r], Status::kInvalidUsage) << "rank " << r;
    EXPECT_NE(messages[r].find("every rank must make the same call"), std::string::npos) << messages[r];
    EXPECT_EQ(failures[r].culprit, r);
    EXPECT_EQ(out[r][0], -1.0f);
  }
  const Case next{CollKind::kAllReduce, ccInt32, ccSum, 1001, false, 0};
  EXPECT_EQ(runCase(mesh, next, false), "");
}

}  // namespace
}  // namespace collcomm::detail
