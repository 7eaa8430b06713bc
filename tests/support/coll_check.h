// One collective call on one rank with crafted inputs, and the check of its result. Shared by the
// thread-rank and process-rank conformance tests.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/exact_data.h"

namespace collcomm::test {

enum class Coll { kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast, kAlltoAll, kGather, kScatter };

inline const char* collLabel(Coll c) {
  static const char* kNames[] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather",
                                 "Broadcast", "AlltoAll", "Gather", "Scatter"};
  return kNames[static_cast<int>(c)];
}

struct CaseSpec {
  Coll coll;
  ccDataType_t dtype;
  int op;  // ccRedOp_t, or -1 for PreMulSum (scalar kPreMulScalar)
  size_t count;
  bool inPlace;
  int root;
};

inline std::string describe(const CaseSpec& c, int nranks, int rank) {
  char buf[200];
  snprintf(buf, sizeof(buf), "%s nranks=%d rank=%d dtype=%s op=%d count=%zu %s root=%d", collLabel(c.coll), nranks,
           rank, collcomm::detail::dtypeName(c.dtype), c.op, c.count, c.inPlace ? "in-place" : "out-of-place", c.root);
  return buf;
}

// A buffer whose data starts one element past a 64-byte boundary: "unaligned" the way user
// buffers carved out of larger allocations are.
class TestBuffer {
 public:
  TestBuffer(size_t elems, size_t elemSize) : elemSize_(elemSize) {
    const size_t bytes = (elems + 1) * elemSize + 64;
    raw_ = static_cast<char*>(aligned_alloc(64, (bytes + 63) / 64 * 64));
    memset(raw_, 0x5a, (bytes + 63) / 64 * 64);
  }
  ~TestBuffer() { free(raw_); }
  TestBuffer(const TestBuffer&) = delete;
  TestBuffer& operator=(const TestBuffer&) = delete;
  char* data() { return raw_ + elemSize_; }
  char* at(size_t elem) { return data() + elem * elemSize_; }

 private:
  size_t elemSize_;
  char* raw_;
};

// Runs the case on `comm` (rank of nranks) and returns "" or a failure description.
inline std::string runCase(ccComm_t comm, int rank, int nranks, const CaseSpec& c) {
  using namespace collcomm::detail;
  const size_t e = dtypeSize(c.dtype);
  const size_t n = c.count, N = c.count * static_cast<size_t>(nranks);
  const int fillOp = c.op;
  ccRedOp_t op = c.op < 0 ? ccSum : static_cast<ccRedOp_t>(c.op);
  std::string err;
  auto fail = [&](const std::string& what) { return describe(c, nranks, rank) + ": " + what; };
  if (c.op < 0) {
    int64_t s = kPreMulScalar;
    std::vector<char> scalar(e);
    storeValue(c.dtype, scalar.data(), s);
    if (ccRedOpCreatePreMulSum(&op, scalar.data(), c.dtype, ccScalarHostImmediate, comm) != ccSuccess)
      return fail(std::string("ccRedOpCreatePreMulSum failed: ") + ccGetLastError(comm));
  }
  ccResult_t res = ccSuccess;
  std::string bad;
  size_t wrong = 0;
  switch (c.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce: {
      TestBuffer send(n, e), recv(n, e);
      fillInputs(fillOp, c.dtype, rank, send.data(), n);
      void* out = c.inPlace ? send.data() : recv.data();
      res = c.coll == Coll::kAllReduce ? ccAllReduce(send.data(), out, n, c.dtype, op, comm, nullptr)
                                       : ccReduce(send.data(), out, n, c.dtype, op, c.root, comm, nullptr);
      if (res == ccSuccess && (c.coll == Coll::kAllReduce || rank == c.root))
        wrong = countWrong(fillOp, c.dtype, nranks, out, n, 0, &bad);
      break;
    }
    case Coll::kReduceScatter: {
      TestBuffer send(N, e), recv(n, e);
      // Block b of every rank's input reduces into rank b's result: index the inputs globally.
      fillInputs(fillOp, c.dtype, rank, send.data(), N);
      void* out = c.inPlace ? send.at(n * rank) : recv.data();
      res = ccReduceScatter(send.data(), out, n, c.dtype, op, comm, nullptr);
      if (res == ccSuccess) wrong = countWrong(fillOp, c.dtype, nranks, out, n, n * rank, &bad);
      break;
    }
    case Coll::kAllGather:
    case Coll::kGather: {
      TestBuffer send(n, e), recv(N, e);
      const bool root = c.coll == Coll::kAllGather || rank == c.root;
      void* in = c.inPlace && root ? recv.at(n * rank) : send.data();
      fillInputs(ccSum, c.dtype, rank, in, n);
      res = c.coll == Coll::kAllGather ? ccAllGather(in, recv.data(), n, c.dtype, comm, nullptr)
                                       : ccGather(in, recv.data(), n, c.dtype, c.root, comm, nullptr);
      if (res == ccSuccess && root) {
        TestBuffer want(N, e);
        for (int r = 0; r < nranks; ++r) fillInputs(ccSum, c.dtype, r, want.at(n * r), n);
        for (size_t i = 0; i < N; ++i) wrong += memcmp(want.at(i), recv.at(i), e) != 0;
      }
      break;
    }
    case Coll::kBroadcast: {
      TestBuffer send(n, e), recv(n, e);
      void* buf = c.inPlace ? recv.data() : send.data();
      if (rank == c.root) fillInputs(ccSum, c.dtype, c.root, buf, n);
      res = ccBroadcast(buf, recv.data(), n, c.dtype, c.root, comm, nullptr);
      if (res == ccSuccess) {
        TestBuffer want(n, e);
        fillInputs(ccSum, c.dtype, c.root, want.data(), n);
        for (size_t i = 0; i < n; ++i) wrong += memcmp(want.at(i), recv.at(i), e) != 0;
      }
      break;
    }
    case Coll::kScatter: {
      TestBuffer send(N, e), recv(n, e);
      if (rank == c.root)
        for (int r = 0; r < nranks; ++r) fillInputs(ccSum, c.dtype, r, send.at(n * r), n);
      void* out = c.inPlace && rank == c.root ? send.at(n * rank) : recv.data();
      res = ccScatter(send.data(), out, n, c.dtype, c.root, comm, nullptr);
      if (res == ccSuccess) {
        TestBuffer want(n, e);
        fillInputs(ccSum, c.dtype, rank, want.data(), n);
        for (size_t i = 0; i < n; ++i) wrong += memcmp(want.at(i), static_cast<char*>(out) + i * e, e) != 0;
      }
      break;
    }
    case Coll::kAlltoAll: {
      TestBuffer send(N, e), recv(N, e);
      // Block p of rank r's input holds the values "rank r*nranks+p" would have.
      for (int p = 0; p < nranks; ++p) fillInputs(ccSum, c.dtype, rank * nranks + p, send.at(n * p), n);
      res = ccAlltoAll(send.data(), recv.data(), n, c.dtype, comm, nullptr);
      if (res == ccSuccess) {
        TestBuffer want(N, e);
        for (int p = 0; p < nranks; ++p) fillInputs(ccSum, c.dtype, p * nranks + rank, want.at(n * p), n);
        for (size_t i = 0; i < N; ++i) wrong += memcmp(want.at(i), recv.at(i), e) != 0;
      }
      break;
    }
  }
  if (c.op < 0) ccRedOpDestroy(op, comm);
  if (res != ccSuccess) return fail(std::string("returned ") + ccGetErrorString(res) + ": " + ccGetLastError(comm));
  if (wrong != 0) return fail(std::to_string(wrong) + " wrong elements; first " + bad);
  return "";
}

// The sweep every rank runs in the same order: all collectives x dtypes x ops x counts x in/out
// of place x roots; large counts for a representative subset.
inline std::vector<CaseSpec> conformanceCases(int nranks, bool withLarge) {
  std::vector<CaseSpec> cases;
  const size_t counts[] = {0, 1, 37, 1001};
  const int ops[] = {ccSum, ccProd, ccMax, ccMin, ccAvg, -1};
  for (int t = 0; t < ccNumTypes; ++t) {
    const auto dt = static_cast<ccDataType_t>(t);
    for (size_t count : counts) {
      for (bool inPlace : {false, true}) {
        for (int op : ops) {
          cases.push_back({Coll::kAllReduce, dt, op, count, inPlace, 0});
          cases.push_back({Coll::kReduceScatter, dt, op, count, inPlace, 0});
          cases.push_back({Coll::kReduce, dt, op, count, inPlace, (t + op + 2) % nranks});
        }
        cases.push_back({Coll::kAllGather, dt, ccSum, count, inPlace, 0});
        for (int root : {0, nranks - 1}) {
          cases.push_back({Coll::kBroadcast, dt, ccSum, count, inPlace, root});
          cases.push_back({Coll::kGather, dt, ccSum, count, inPlace, root});
          cases.push_back({Coll::kScatter, dt, ccSum, count, inPlace, root});
        }
        cases.push_back({Coll::kAlltoAll, dt, ccSum, count, false, 0});
      }
    }
  }
  if (withLarge) {
    const size_t big = (1u << 20) + 3;
    cases.push_back({Coll::kAllReduce, ccFloat32, ccSum, big, false, 0});
    cases.push_back({Coll::kAllReduce, ccBfloat16, ccMax, big, true, 0});
    cases.push_back({Coll::kAllReduce, ccInt8, ccProd, big, false, 0});
    cases.push_back({Coll::kReduceScatter, ccFloat16, ccSum, big / nranks + 1, false, 0});
    cases.push_back({Coll::kAllGather, ccInt32, ccSum, big / nranks + 1, true, 0});
    cases.push_back({Coll::kBroadcast, ccFloat64, ccSum, big, false, nranks / 2});
    cases.push_back({Coll::kReduce, ccUint64, ccMin, big, false, nranks - 1});
    cases.push_back({Coll::kAlltoAll, ccUint8, ccSum, big / nranks + 5, false, 0});
  }
  return cases;
}

}  // namespace collcomm::test
