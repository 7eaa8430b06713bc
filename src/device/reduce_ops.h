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
//   - min/max on floating types are IEEE 754-2019 minimumNumber/maximumNumber: a NaN operand
//     yields the other operand (like fminf/fmaxf and __hmin/__hmax) and -0 < +0, so the result
//     does not depend on operand order.
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

template <class T>
CC_HD CC_FORCE_INLINE T addOf(T a, T b) {
  if constexpr (kIsFloatBacked<T>) {
    return fromFloat<T>(toFloat(a) + toFloat(b));
  } else if constexpr (kIsNarrowFloat<T>) {
    return fromDouble<T>(toDouble(a) + toDouble(b));
  } else if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    return static_cast<T>(static_cast<MathUint<T>>(a) + static_cast<MathUint<T>>(b));
  }
}

template <class T>
CC_HD CC_FORCE_INLINE T mulOf(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return fromFloat<T>(toFloat(a) * toFloat(b));  // exact: nothing to fuse or round twice
  } else if constexpr (kIsNarrowFloat<T>) {
    return fromDouble<T>(toDouble(a) * toDouble(b));
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

// Floating core of minMaxOf: compares the values fa/fb, returns the matching operand a/b.
template <bool kMax, class F, class T>
CC_HD CC_FORCE_INLINE T minMaxSelect(F fa, F fb, T a, T b) {
  if (fb != fb) return a;  // b NaN: a (NaN too when both are)
  if (fa != fa) return b;
  if (fa < fb) return kMax ? b : a;
  if (fb < fa) return kMax ? a : b;
  // Equal values: only +0 and -0 differ in bits.
  return (signBitOf(a) != kMax) ? a : b;
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
      return fromDouble<T>(toDouble(x) / static_cast<double>(divisor_));
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
