// Reduction functors of the data path (device code: g++ and nvcc) and the one list of their kinds.
//
// Contract of a reduction functor Fn<T> (T any element type of CC_DTYPE_LIST), which the
// primitives and reduceCopy rely on:
//
//   CC_HD explicit Fn(uint64_t opArg);    // per-op argument made by makeOpArg (op_arg.h)
//   static constexpr bool kHasPreOp;      // false: preOp is the identity and may be skipped
//   static constexpr bool kHasPostOp;     // false: postOp is the identity and may be skipped
//   CC_HD T reduce(T a, T b) const;       // combine two values; commutative and associative as
//                                         // far as the arithmetic of T allows
//   CC_HD T preOp(T x) const;             // once on each rank's own input element, when first loaded
//   CC_HD T postOp(T x) const;            // once on each final result element
//
// Results are what a GPU computes, bit for bit:
//   - integers wrap around (the math is done in the unsigned type: signed overflow is UB in C++);
//   - float/double use native arithmetic, rounded to nearest; products are never fused into a
//     following add (the device path uses __fmul_rn/__dmul_rn, which nvcc will not contract);
//   - Half/Bfloat16/Fp8 compute in double and round to T once per operation; a sum or product of
//     two such values is exact in double, so this is the correctly rounded result that the GPU's
//     __hadd/__hmul give (fp8 then rounds with saturation, as NCCL's __NV_SATFINITE does);
//     Bfloat16 sums and Half sums and products compute in float, with the same result: a Half
//     product is exact in float (22 bits, 2^-48..2^32); a sum is exact in float unless the
//     exponents are more than 16 (Bfloat16) or 12 (Half) apart, and then the smaller operand is
//     under a quarter of the larger's ulp in T, so neither rounding can land on or cross a tie
//     of T. (Bfloat16 products stay in double: one that underflows float would round twice.)
//     Their conversions to and from float are branch-free (dtypes.h), so these loops vectorise;
//     a Bfloat16 subnormal result needs float subnormals (FTZ set by the application would
//     flush it);
//   - a NaN result of Half/Bfloat16/Fp8 arithmetic (sum, product, PreMulSum's product, SumPostDiv's
//     quotient) is the canonical NaN: every bit but the sign set (0x7fff; 0x7f for fp8), whatever
//     the operands were (fromFloatResult, canonicalNan). The GPU's float unit returns 0x7fffffff
//     for every NaN it computes, while x86 passes an operand's payload on (chosen by operand
//     position) or makes its own 0xffc00000 (inf - inf, 0 * inf): before this rule Half/Bfloat16
//     sums and Half products with a NaN differed between the executors (measured on an H100:
//     0x7fff on the GPU, 0x7fc1, 0xfe00, ... on the host). The double path (Fp8, Bfloat16
//     products, SumPostDiv) agreed on the H100, and takes the same rule so that there is one for
//     every narrow float. float and double results keep the hardware's NaN bits, which differ
//     between x86 and GPUs;
//   - min/max on floating types are IEEE 754-2019 minimumNumber/maximumNumber: a NaN operand
//     yields the other operand (like fminf/fmaxf and __hmin/__hmax) and -0 < +0; of two NaNs the
//     one with the larger payload, the positive one on equal payloads (nanPrefersFirst). The
//     result is always one operand's bits, unchanged, and it does not depend on operand order,
//     NaNs included: every executor combines the ranks in its own order (ring direction and
//     start, rank order). With "the first of two NaNs" as the rule, an H100 ring Reduce returned
//     another rank's NaN than the host executor, while single calls gave the same bits on both
//     (so the order differed). minMaxOf has no device-only branch: nvcc compiles the same
//     source as g++ (no __hmin/__hmax, no conversion of a result).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/host_device.h"
#include "device/dtypes.h"

namespace collcomm::detail {

// The op kinds the data path implements, X(Name): functor FuncName, RedOpKind::kName.
// Public ops map onto them in op_arg.h (ccAvg becomes PreMulSum or SumPostDiv).
#define CC_REDOP_LIST(X) X(Sum) X(Prod) X(Max) X(Min) X(PreMulSum) X(SumPostDiv)

enum class RedOpKind : uint8_t {
#define CC_REDOP_ENUM(name) k##name,
  CC_REDOP_LIST(CC_REDOP_ENUM)
#undef CC_REDOP_ENUM
};
// Not an enumerator, so that switches over RedOpKind can be exhaustive without a default.
inline constexpr int kRedOpKindCount = 0
#define CC_REDOP_COUNT(name) +1
    CC_REDOP_LIST(CC_REDOP_COUNT)
#undef CC_REDOP_COUNT
    ;

CC_HD constexpr const char* redOpKindName(RedOpKind kind) {
  switch (kind) {
#define CC_REDOP_NAME(name) \
  case RedOpKind::k##name:  \
    return #name;
    CC_REDOP_LIST(CC_REDOP_NAME)
#undef CC_REDOP_NAME
    default:
      return "unknown";
  }
}

// ---- scalar arithmetic per element type -------------------------------------------------------

template <class T>
using MathUint = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

template <class T>
CC_HD CC_FORCE_INLINE bool signBitOf(T x) {
  if constexpr (kIsNarrowFloat<T>) {
    return (x.bits & NarrowFormatOf<T>::kSignBit) != 0;
  } else {
    using U = UintOfSize<sizeof(T)>;
    return (bitCast<U>(x) >> (8 * sizeof(T) - 1)) != 0;
  }
}

// The canonical NaN, as the GPU's float unit computes it: all bits but the sign set, whatever
// the operands were (see the banner). Applied to the double result of narrow arithmetic before
// it is rounded to T, whose conversion keeps the top payload bits: Half and Bfloat16 get 0x7fff,
// Fp8E4M3 and Fp8E5M2 0x7f. Float results get it from fromFloatResult.
CC_HD CC_FORCE_INLINE double canonicalNan(double d) {
  return d != d ? bitCast<double>(uint64_t{0x7fffffffffffffffull}) : d;
}

// T from the float result of arithmetic on the float-backed T: rounded as fromFloat does, but a
// NaN is the canonical one (0x7fff), made in the conversion's own NaN select (dtypes.h,
// kCanonicalNan), so that the sum loops do no extra work.
template <class T>
CC_HD CC_FORCE_INLINE T fromFloatResult(float f) {
  static_assert(kIsFloatBacked<T>);
  if constexpr (std::is_same_v<T, Bfloat16>) {
    return T{bfloat16FromFloatBits<true>(bitCast<uint32_t>(f))};
  } else {
    return T{halfFromFloatBits<true>(bitCast<uint32_t>(f))};
  }
}

template <class T>
CC_HD CC_FORCE_INLINE T addOf(T a, T b) {
  if constexpr (kIsFloatBacked<T>) {
    return fromFloatResult<T>(toFloat(a) + toFloat(b));
  } else if constexpr (kIsNarrowFloat<T>) {
    return fromDouble<T>(canonicalNan(toDouble(a) + toDouble(b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    return static_cast<T>(static_cast<MathUint<T>>(a) + static_cast<MathUint<T>>(b));
  }
}

template <class T>
CC_HD CC_FORCE_INLINE T mulOf(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return fromFloatResult<T>(toFloat(a) * toFloat(b));  // exact: nothing to fuse or round twice
  } else if constexpr (kIsNarrowFloat<T>) {
    return fromDouble<T>(canonicalNan(toDouble(a) * toDouble(b)));
#if CC_DEVICE_COMPILE
  } else if constexpr (std::is_same_v<T, float>) {
    return __fmul_rn(a, b);
  } else if constexpr (std::is_same_v<T, double>) {
    return __dmul_rn(a, b);
#endif
  } else if constexpr (std::is_floating_point_v<T>) {
    return a * b;
  } else {
    return static_cast<T>(static_cast<MathUint<T>>(a) * static_cast<MathUint<T>>(b));
  }
}

// Of two NaNs a and b, whether a is the one to return: the larger payload (so a quiet NaN before
// a signalling one with the same low bits), the positive one when only the sign differs. A total
// order on NaN codes, so min/max stay commutative and associative when several ranks hold NaNs.
template <class T>
CC_HD CC_FORCE_INLINE bool nanPrefersFirst(T a, T b) {
  // In T's own width (32 bits for the narrow ones), so that float/double loops still vectorise.
  using U = std::conditional_t<(sizeof(T) < 4), uint32_t, UintOfSize<sizeof(T)>>;
  constexpr U kSign = U{1} << (8 * sizeof(T) - 1);
  const U ua = static_cast<U>(bitCast<UintOfSize<sizeof(T)>>(a));
  const U ub = static_cast<U>(bitCast<UintOfSize<sizeof(T)>>(b));
  const U ma = ua & ~kSign, mb = ub & ~kSign;
  return (ma > mb) | ((ma == mb) & ((ua & kSign) == 0));
}

// Floating core of minMaxOf: compares the values fa/fb, returns the matching operand a/b. One
// select of whole operands, the conditions combined without branches, so that loops vectorise.
template <bool kMax, class F, class T>
CC_HD CC_FORCE_INLINE T minMaxSelect(F fa, F fb, T a, T b) {
  const bool aNan = fa != fa, bNan = fb != fb;
  // Two numbers: the smaller (larger) one; equal values differ only as -0 and +0, and -0 < +0.
  const bool numberA = kMax ? (fb < fa) | ((fa == fb) & !signBitOf(a)) : (fa < fb) | ((fa == fb) & signBitOf(a));
  // A NaN yields the other operand; of two NaNs, nanPrefersFirst decides.
  const bool pickA = (bNan & (!aNan | nanPrefersFirst(a, b))) | (!bNan & !aNan & numberA);
  return pickA ? a : b;
}

// minimumNumber (kMax = false) / maximumNumber (kMax = true); returns one of the operands.
template <bool kMax, class T>
CC_HD CC_FORCE_INLINE T minMaxOf(T a, T b) {
  if constexpr (kIsNarrowFloat<T>) {
    return minMaxSelect<kMax>(toFloat(a), toFloat(b), a, b);  // toFloat is exact here
  } else if constexpr (std::is_floating_point_v<T>) {
    return minMaxSelect<kMax>(a, b, a, b);
  } else if constexpr (kMax) {
    return a < b ? b : a;
  } else {
    return b < a ? b : a;
  }
}

// ---- functors ---------------------------------------------------------------------------------

// Plain sum. Cost: one add (narrow floats: two conversions and a rounding).
template <class T>
struct FuncSum {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  CC_HD explicit FuncSum(uint64_t /*opArg*/ = 0) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return addOf(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return x; }
  CC_HD CC_FORCE_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct FuncProd {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  CC_HD explicit FuncProd(uint64_t /*opArg*/ = 0) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return mulOf(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return x; }
  CC_HD CC_FORCE_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct FuncMax {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  CC_HD explicit FuncMax(uint64_t /*opArg*/ = 0) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return minMaxOf<true>(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return x; }
  CC_HD CC_FORCE_INLINE T postOp(T x) const { return x; }
};

template <class T>
struct FuncMin {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = false;
  CC_HD explicit FuncMin(uint64_t /*opArg*/ = 0) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return minMaxOf<false>(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return x; }
  CC_HD CC_FORCE_INLINE T postOp(T x) const { return x; }
};

// Sum of each rank's input times a scalar (ccRedOpCreatePreMulSum; ccAvg on floating types with
// scalar 1/nranks). opArg: the scalar's bits as T, zero-extended. The product is rounded to T
// before the sum, as on the GPU.
template <class T>
struct FuncPreMulSum {
  static constexpr bool kHasPreOp = true;
  static constexpr bool kHasPostOp = false;
  CC_HD explicit FuncPreMulSum(uint64_t opArg) : scalar_(bitCast<T>(static_cast<UintOfSize<sizeof(T)>>(opArg))) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return addOf(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return mulOf(x, scalar_); }
  CC_HD CC_FORCE_INLINE T postOp(T x) const { return x; }

 private:
  T scalar_;
};

// Sum, then divide by n = opArg >= 1: ccAvg on integer types. Integer division truncates toward
// zero (-7 / 2 = -3); on floating T (not used by makeOpArg) the quotient is rounded to T.
template <class T>
struct FuncSumPostDiv {
  static constexpr bool kHasPreOp = false;
  static constexpr bool kHasPostOp = true;
  CC_HD explicit FuncSumPostDiv(uint64_t opArg) : divisor_(opArg) {}
  CC_HD CC_FORCE_INLINE T reduce(T a, T b) const { return addOf(a, b); }
  CC_HD CC_FORCE_INLINE T preOp(T x) const { return x; }
  CC_HD CC_FORCE_INLINE T postOp(T x) const {
    if constexpr (kIsFloating<T>) {
      return fromDouble<T>(canonicalNan(toDouble(x) / static_cast<double>(divisor_)));
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<int64_t>(x) / static_cast<int64_t>(divisor_));
    } else {
      return static_cast<T>(static_cast<uint64_t>(x) / divisor_);
    }
  }

 private:
  uint64_t divisor_;
};

// RedOpFunc<RedOpKind::kSum, T>::Type is FuncSum<T>, and so on (for kernel/dispatch tables).
template <RedOpKind kKind, class T>
struct RedOpFunc;
#define CC_REDOP_FUNC(name)                 \
  template <class T>                        \
  struct RedOpFunc<RedOpKind::k##name, T> { \
    using Type = Func##name<T>;             \
  };
CC_REDOP_LIST(CC_REDOP_FUNC)
#undef CC_REDOP_FUNC

}  // namespace collcomm::detail
