// Typed fill and check loops over exact_data.h's generators.
#include "common/data.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "support/exact_data.h"

namespace collcomm::perf {
namespace {

namespace test = collcomm::test;
using collcomm::detail::dtypeIsFloating;

// Copying collectives move values unchanged, so any representable value will do; MAX's inputs
// are the widest exact range exact_data.h has (17 values in every float type, 200 in integers),
// which makes a misplaced element likely to show.
inline int64_t copyValue(ccDataType_t type, int rank, size_t index) {
  return test::inputValue(ccMax, type, rank, index);
}

template <class T>
T poisonValue() {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return std::numeric_limits<T>::min();
  } else {
    T v;
    memset(&v, 0xff, sizeof(T));  // unsigned: the maximum; IEEE and narrow floats: a NaN
    return v;
  }
}

template <class T>
void writeTyped(ccDataType_t type, int op, uint64_t seed, T* base, const std::vector<Segment>& segs) {
  for (const Segment& s : segs) {
    T* p = base + s.offset;
    const size_t first = s.firstIndex + seed;
    switch (s.kind) {
      case ValueKind::kReduceInput:
        for (size_t i = 0; i < s.length; ++i) p[i] = test::valueAs<T>(test::inputValue(op, type, s.rank, first + i));
        break;
      case ValueKind::kCopy:
        for (size_t i = 0; i < s.length; ++i) p[i] = test::valueAs<T>(copyValue(type, s.rank, first + i));
        break;
      case ValueKind::kUntouched: {
        const T v = poisonValue<T>();
        for (size_t i = 0; i < s.length; ++i) p[i] = v;
        break;
      }
      case ValueKind::kReduced:  // an output, never an input
        break;
    }
  }
}

template <class T>
bool sameBits(const T& a, const T& b) {
  return memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
int64_t checkTyped(ccDataType_t type, int op, int nranks, uint64_t seed, const T* base,
                   const std::vector<Segment>& segs, std::string* first) {
  int64_t wrong = 0;
  // Floating AVG divides (or multiplies by 1/n) in the element type: compare within a tolerance
  // of the exact mean, like tests/support/exact_data.h does.
  const bool approx = op == ccAvg && dtypeIsFloating(type);
  const double tol = type == ccFloat8e4m3 || type == ccFloat8e5m2 ? 0.75
                     : type == ccBfloat16                         ? 0.1
                     : type == ccFloat16                          ? 0.02
                                                                  : 1e-5;
  for (const Segment& s : segs) {
    const T* p = base + s.offset;
    const size_t idx0 = s.firstIndex + seed;
    for (size_t i = 0; i < s.length; ++i) {
      T want;
      bool bad;
      if (s.kind == ValueKind::kReduced && approx) {
        double exact = 0;
        for (int r = 0; r < nranks; ++r) exact += static_cast<double>(test::inputValue(op, type, r, idx0 + i));
        exact /= nranks;
        want = test::valueAs<T>(0);
        bad = !(std::fabs(test::doubleOf<T>(p[i]) - exact) <= tol);
        if (bad) want = test::valueAs<T>(static_cast<int64_t>(std::lround(exact)));
      } else {
        switch (s.kind) {
          case ValueKind::kReduceInput:
            want = test::valueAs<T>(test::inputValue(op, type, s.rank, idx0 + i));
            break;
          case ValueKind::kReduced:
            want = test::valueAs<T>(test::expectedValue(op, type, nranks, idx0 + i));
            break;
          case ValueKind::kCopy:
            want = test::valueAs<T>(copyValue(type, s.rank, idx0 + i));
            break;
          default:
            want = poisonValue<T>();
            break;
        }
        bad = !sameBits(p[i], want);
      }
      if (bad && wrong++ == 0 && first != nullptr && first->empty()) {
        char msg[200];
        snprintf(msg, sizeof(msg), "element %zu: got %.17g, expected %.17g", s.offset + i, test::doubleOf<T>(p[i]),
                 test::doubleOf<T>(want));
        *first = msg;
      }
    }
  }
  return wrong;
}

}  // namespace

void poison(ccDataType_t type, void* buf, size_t n) {
  switch (type) {
#define CC_PERF_POISON(e, T, name)           \
  case e: {                                  \
    const T v = poisonValue<T>();            \
    T* p = static_cast<T*>(buf);             \
    for (size_t i = 0; i < n; ++i) p[i] = v; \
    break;                                   \
  }
    CC_DTYPE_LIST(CC_PERF_POISON)
#undef CC_PERF_POISON
    default:
      break;
  }
}

void writeSegments(ccDataType_t type, int exactOp, uint64_t seed, void* base, const std::vector<Segment>& segs) {
  switch (type) {
#define CC_PERF_WRITE(e, T, name)                                    \
  case e:                                                            \
    writeTyped<T>(type, exactOp, seed, static_cast<T*>(base), segs); \
    break;
    CC_DTYPE_LIST(CC_PERF_WRITE)
#undef CC_PERF_WRITE
    default:
      break;
  }
}

int64_t countWrong(ccDataType_t type, int exactOp, int nranks, uint64_t seed, const void* base,
                   const std::vector<Segment>& segs, std::string* first) {
  switch (type) {
#define CC_PERF_CHECK(e, T, name) \
  case e:                         \
    return checkTyped<T>(type, exactOp, nranks, seed, static_cast<const T*>(base), segs, first);
    CC_DTYPE_LIST(CC_PERF_CHECK)
#undef CC_PERF_CHECK
    default:
      return 0;
  }
}

void preMulScalar(ccDataType_t type, uint64_t* scalar) {
  *scalar = 0;
  test::storeValue(type, scalar, test::kPreMulScalar);
}

}  // namespace collcomm::perf
