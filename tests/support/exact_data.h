// Inputs whose reduced result is exact whatever the reduction order, and that result.
//
// Each rank's element i is a small integer chosen by (op, type, rank, i) so that every partial
// result is representable in the element type: floating sums stay within the type's exact-integer
// range (fp8 e5m2: 8, e4m3: 16), products are powers of two, integer sums and products may wrap
// (wrapping arithmetic is order-independent). Expected values are computed in 64-bit integers or
// doubles and compared bit for bit; only floating AVG gets a tolerance.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "collcomm.h"
#include "device/dtypes.h"

namespace collcomm::test {

using namespace collcomm::detail;

// The PreMulSum scalar the tests use: 2 (exact in every type).
inline constexpr int kPreMulScalar = 2;

inline bool isSignedType(ccDataType_t t) {
  return t == ccInt8 || t == ccInt32 || t == ccInt64 || dtypeIsFloating(t);
}

// op: a ccRedOp_t, or -1 for PreMulSum.
inline int64_t inputValue(int op, ccDataType_t t, int rank, size_t i) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + static_cast<uint64_t>(rank) * 40503u + 17) >> 7;
  const bool fl = dtypeIsFloating(t);
  const bool sgn = isSignedType(t);
  int64_t span;
  switch (op) {
    case ccSum:
      if (!fl) return static_cast<int64_t>(h % 251) - (sgn ? 125 : 0);
      span = t == ccFloat8e5m2 ? 1 : t == ccFloat8e4m3 ? 2 : 8;
      return static_cast<int64_t>(h % (2 * span + 1)) - span;
    case ccProd:
      if (!fl) return static_cast<int64_t>(h % 7) - (sgn ? 3 : 0);
      {
        static const int64_t kVals[4] = {1, 2, -1, -2};
        return kVals[h % 4];
      }
    case ccMax:
    case ccMin:
      if (!fl) return static_cast<int64_t>(h % 200) - (sgn ? 100 : 0);
      return static_cast<int64_t>(h % 17) - 8;
    case ccAvg:
      if (!fl) return static_cast<int64_t>(h % 16) - (sgn ? 7 : 0);
      return static_cast<int64_t>(h % 9) - 4;
    default:  // PreMulSum
      if (!fl) return static_cast<int64_t>(h % 251) - (sgn ? 125 : 0);
      span = t == ccFloat8e5m2 ? 1 : t == ccFloat8e4m3 ? 1 : 8;
      return static_cast<int64_t>(h % (2 * span + 1)) - span;
  }
}

template <class T>
T valueAs(int64_t v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<uint64_t>(v));
  else return fromDouble<T>(static_cast<double>(v));
}

template <class T>
double doubleOf(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<double>(x);
  else return toDouble<T>(x);
}

// Stores integer value v as one element of type t at p.
inline void storeValue(ccDataType_t t, void* p, int64_t v) {
  switch (t) {
#define CC_TEST_STORE(e, T, name)                                   \
  case e: {                                                          \
    T x = valueAs<T>(v);                                             \
    memcpy(p, &x, sizeof(T));                                        \
    break;                                                           \
  }
    CC_DTYPE_LIST(CC_TEST_STORE)
#undef CC_TEST_STORE
    default: break;
  }
}

inline double loadAsDouble(ccDataType_t t, const void* p) {
  switch (t) {
#define CC_TEST_LOAD(e, T, name) \
  case e: {                      \
    T x;                         \
    memcpy(&x, p, sizeof(T));    \
    return doubleOf<T>(x);       \
  }
    CC_DTYPE_LIST(CC_TEST_LOAD)
#undef CC_TEST_LOAD
    default: return 0;
  }
}

// Exact expected result of reducing element i over ranks [0, nranks), as an integer (floating
// results are integers too, except AVG). Integer results wrap like the type.
inline int64_t expectedValue(int op, ccDataType_t t, int nranks, size_t i) {
  const bool fl = dtypeIsFloating(t);
  int64_t acc = inputValue(op, t, 0, i);
  if (op == -1) acc *= kPreMulScalar;
  for (int r = 1; r < nranks; ++r) {
    int64_t v = inputValue(op, t, r, i);
    switch (op) {
      case ccSum:
      case ccAvg: acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v)); break;
      case ccProd: acc = static_cast<int64_t>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v)); break;
      case ccMax: acc = v > acc ? v : acc; break;
      case ccMin: acc = v < acc ? v : acc; break;
      default:
        acc = static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v) * kPreMulScalar);
        break;
    }
  }
  if (op == ccAvg && !fl) {
    // Sum then truncating division in the element type.
    uint64_t bits = static_cast<uint64_t>(acc);
    switch (t) {
      case ccInt8: return static_cast<int8_t>(bits) / nranks;
      case ccUint8: return static_cast<uint8_t>(bits) / static_cast<unsigned>(nranks);
      case ccInt32: return static_cast<int32_t>(bits) / nranks;
      case ccUint32: return static_cast<uint32_t>(bits) / static_cast<uint32_t>(nranks);
      case ccInt64: return static_cast<int64_t>(bits) / nranks;
      default: return static_cast<int64_t>(bits / static_cast<uint64_t>(nranks));
    }
  }
  return acc;
}

// Fills a buffer of n elements with rank's inputs.
inline void fillInputs(int op, ccDataType_t t, int rank, void* buf, size_t n, size_t firstIndex = 0) {
  const size_t e = dtypeSize(t);
  for (size_t i = 0; i < n; ++i) storeValue(t, static_cast<char*>(buf) + i * e, inputValue(op, t, rank, firstIndex + i));
}

// Checks n elements against the expected reduction; returns the number of wrong elements and
// describes the first one in *first.
inline size_t countWrong(int op, ccDataType_t t, int nranks, const void* buf, size_t n, size_t firstIndex,
                         std::string* first) {
  const size_t e = dtypeSize(t);
  std::vector<char> want(e);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* got = static_cast<const char*>(buf) + i * e;
    bool bad;
    if (op == ccAvg && dtypeIsFloating(t)) {
      double exact = 0;
      for (int r = 0; r < nranks; ++r) exact += static_cast<double>(inputValue(op, t, r, firstIndex + i));
      exact /= nranks;
      const double tol = t == ccFloat8e4m3 || t == ccFloat8e5m2 ? 0.75 : t == ccBfloat16 ? 0.1 : t == ccFloat16 ? 0.02 : 1e-5;
      bad = !(std::fabs(loadAsDouble(t, got) - exact) <= tol);
    } else {
      storeValue(t, want.data(), expectedValue(op, t, nranks, firstIndex + i));
      bad = memcmp(got, want.data(), e) != 0;
    }
    if (bad && wrong++ == 0 && first != nullptr) {
      char msg[160];
      snprintf(msg, sizeof(msg), "element %zu: got %g, expected %g", firstIndex + i, loadAsDouble(t, got),
               loadAsDouble(t, want.data()));
      *first = msg;
    }
  }
  return wrong;
}

}  // namespace collcomm::test
