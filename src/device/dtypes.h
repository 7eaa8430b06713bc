// Element types of the data path: the one list of ccDataType_t values (CC_DTYPE_LIST), the
// storage types for the narrow floats (Half, Bfloat16, Fp8E4M3, Fp8E5M2) and their conversions.
//
// Device code: compiles with g++ (host executor) and nvcc (kernels), so no CUDA header and no
// <cmath>; conversions are done on the bits, which also keeps them independent of FTZ/fast-math.
// Every conversion to a narrow float rounds to nearest even, like the GPU's cvt.rn:
//   Half, Bfloat16: overflow gives ±inf, NaN stays NaN (sign and top payload bits kept);
//   Fp8E4M3, Fp8E5M2: saturate to ±max finite, infinities included (CUDA's __NV_SATFINITE);
//                     NaN stays NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collcomm.h"
#include "common/host_device.h"

namespace collcomm::detail {

// IEEE binary16.
struct Half {
  uint16_t bits;
};
// Top half of an IEEE binary32.
struct Bfloat16 {
  uint16_t bits;
};
// OCP e4m3fn (CUDA __nv_fp8_e4m3): bias 7, no infinities, max 448, NaN = 0x7f/0xff.
struct Fp8E4M3 {
  uint8_t bits;
};
// OCP e5m2 (CUDA __nv_fp8_e5m2): the top byte of a binary16, with infinities and NaNs; max 57344.
struct Fp8E5M2 {
  uint8_t bits;
};

// Every ccDataType_t, in enum order: X(enumerator, element type, name as nccl-tests prints it).
// clang-format off
#define CC_DTYPE_LIST(X)                                      \
  X(ccInt8,       int8_t,                         "int8")     \
  X(ccUint8,      uint8_t,                        "uint8")    \
  X(ccInt32,      int32_t,                        "int32")    \
  X(ccUint32,     uint32_t,                       "uint32")   \
  X(ccInt64,      int64_t,                        "int64")    \
  X(ccUint64,     uint64_t,                       "uint64")   \
  X(ccFloat16,    ::collcomm::detail::Half,       "half")     \
  X(ccFloat32,    float,                          "float")    \
  X(ccFloat64,    double,                         "double")   \
  X(ccBfloat16,   ::collcomm::detail::Bfloat16,   "bfloat16") \
  X(ccFloat8e4m3, ::collcomm::detail::Fp8E4M3,    "f8e4m3")   \
  X(ccFloat8e5m2, ::collcomm::detail::Fp8E5M2,    "f8e5m2")
// clang-format on

namespace dtype_list_check {
enum : int {
#define CC_DTYPE_INDEX(e, T, name) kIndexOf_##e,
  CC_DTYPE_LIST(CC_DTYPE_INDEX)
#undef CC_DTYPE_INDEX
      kListed
};
#define CC_DTYPE_ORDER(e, T, name) \
  static_assert(static_cast<int>(kIndexOf_##e) == static_cast<int>(e), "CC_DTYPE_LIST must follow ccDataType_t");
CC_DTYPE_LIST(CC_DTYPE_ORDER)
#undef CC_DTYPE_ORDER
static_assert(static_cast<int>(kListed) == static_cast<int>(ccNumTypes), "CC_DTYPE_LIST must list every ccDataType_t");
}  // namespace dtype_list_check

static_assert(sizeof(Half) == 2 && sizeof(Bfloat16) == 2 && sizeof(Fp8E4M3) == 1 && sizeof(Fp8E5M2) == 1);
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<Bfloat16> &&
              std::is_trivially_copyable_v<Fp8E4M3> && std::is_trivially_copyable_v<Fp8E5M2>);

// DtypeTraits<ccFloat16>::Type is Half, and so on.
template <ccDataType_t D>
struct DtypeTraits;
#define CC_DTYPE_TRAITS(e, T, name) \
  template <>                       \
  struct DtypeTraits<e> {           \
    using Type = T;                 \
  };
CC_DTYPE_LIST(CC_DTYPE_TRAITS)
#undef CC_DTYPE_TRAITS

// Bytes per element; 0 for a value outside the enum.
CC_HD constexpr size_t dtypeSize(ccDataType_t type) {
  switch (type) {
#define CC_DTYPE_SIZE(e, T, name) \
  case e:                         \
    return sizeof(T);
    CC_DTYPE_LIST(CC_DTYPE_SIZE)
#undef CC_DTYPE_SIZE
    default:
      return 0;
  }
}

// "int8", "half", "f8e4m3", ... (nccl-tests' -d names); "unknown" outside the enum.
CC_HD constexpr const char* dtypeName(ccDataType_t type) {
  switch (type) {
#define CC_DTYPE_NAME(e, T, name) \
  case e:                         \
    return name;
    CC_DTYPE_LIST(CC_DTYPE_NAME)
#undef CC_DTYPE_NAME
    default:
      return "unknown";
  }
}

// ---- bit helpers ------------------------------------------------------------------------------

// std::bit_cast without <bit> (not usable in nvcc device code).
template <class To, class From>
CC_HD CC_FORCE_INLINE To bitCast(const From& from) {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<From>);
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
}

template <size_t kBytes>
struct UintOfSizeImpl;
template <>
struct UintOfSizeImpl<1> {
  using Type = uint8_t;
};
template <>
struct UintOfSizeImpl<2> {
  using Type = uint16_t;
};
template <>
struct UintOfSizeImpl<4> {
  using Type = uint32_t;
};
template <>
struct UintOfSizeImpl<8> {
  using Type = uint64_t;
};
template <size_t kBytes>
using UintOfSize = typename UintOfSizeImpl<kBytes>::Type;

// ---- narrow float formats -----------------------------------------------------------------------

// kIeee: the top exponent code is inf (mantissa 0) or NaN. Otherwise ("fn" formats) it holds
// normal numbers and only the all-ones pattern is NaN. kSaturate: overflow gives ±max finite.
template <int kExpBitsV, int kMantBitsV, bool kIeeeV, bool kSaturateV>
struct NarrowFormat {
  static constexpr int kExpBits = kExpBitsV;
  static constexpr int kMantBits = kMantBitsV;
  static constexpr bool kIeee = kIeeeV;
  static constexpr bool kSaturate = kSaturateV;
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint32_t kExpMax = (1u << kExpBits) - 1;  // the all-ones exponent code
  static constexpr uint32_t kMantMask = (1u << kMantBits) - 1;
  static constexpr uint32_t kSignBit = 1u << (kExpBits + kMantBits);
  static constexpr uint32_t kInf = kExpMax << kMantBits;
  static constexpr uint32_t kMaxFinite = kIeee ? kInf - 1 : kInf | (kMantMask - 1);
  static constexpr int kEmin = 1 - kBias;  // of normals
  static constexpr int kEmax = static_cast<int>(kIeee ? kExpMax - 1 : kExpMax) - kBias;
};

template <class T>
struct NarrowFormatOf;
template <>
struct NarrowFormatOf<Half> : NarrowFormat<5, 10, true, false> {};
template <>
struct NarrowFormatOf<Bfloat16> : NarrowFormat<8, 7, true, false> {};
template <>
struct NarrowFormatOf<Fp8E4M3> : NarrowFormat<4, 3, false, true> {};
template <>
struct NarrowFormatOf<Fp8E5M2> : NarrowFormat<5, 2, true, true> {};

template <class T>
inline constexpr bool kIsNarrowFloat =
    std::is_same_v<T, Half> || std::is_same_v<T, Bfloat16> || std::is_same_v<T, Fp8E4M3> || std::is_same_v<T, Fp8E5M2>;
// The narrow floats with branch-free conversions to and from float (halfToFloatBits and the
// others below): their sums (and Half's products) compute in float and vectorise (reduce_ops.h).
template <class T>
inline constexpr bool kIsFloatBacked = std::is_same_v<T, Half> || std::is_same_v<T, Bfloat16>;
template <class T>
inline constexpr bool kIsFloating = kIsNarrowFloat<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
inline constexpr bool kIsElementType =
    kIsFloating<T> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, uint32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t>;

CC_HD constexpr bool dtypeIsFloating(ccDataType_t type) {
  switch (type) {
#define CC_DTYPE_FLOATING(e, T, name) \
  case e:                             \
    return kIsFloating<T>;
    CC_DTYPE_LIST(CC_DTYPE_FLOATING)
#undef CC_DTYPE_FLOATING
    default:
      return false;
  }
}

// NaN code of format F from a NaN's fraction aligned to 52 bits: keeps the top payload bits, so
// every NaN pattern survives a round trip through float; a payload that would vanish becomes quiet.
template <class F>
CC_HD CC_FORCE_INLINE uint32_t narrowNan(uint64_t fraction52) {
  if constexpr (!F::kIeee) {
    return F::kInf | F::kMantMask;
  } else {
    uint32_t payload = static_cast<uint32_t>(fraction52 >> (52 - F::kMantBits));
    if (payload == 0) payload = 1u << (F::kMantBits - 1);
    return F::kInf | payload;
  }
}

// Rounds a non-NaN double to format F (nearest even), on the bits: one rounding, so converting
// an exact double sum/product gives the correctly rounded narrow result.
template <class F>
CC_HD inline uint32_t narrowFromDoubleBits(uint64_t u) {
  const uint32_t sign = (u >> 63) ? F::kSignBit : 0;
  const uint32_t overflow = sign | (F::kSaturate ? F::kMaxFinite : F::kInf);
  const uint64_t a = u & 0x7fffffffffffffffull;
  if (a >= 0x7ff0000000000000ull) return overflow;  // ±inf (NaN is the caller's)
  const int dexp = static_cast<int>(a >> 52);
  if (dexp == 0) return sign;  // zero, or a double subnormal: far below F's
  const int e = dexp - 1023;
  if (e > F::kEmax + 1) return overflow;
  const uint64_t m = (1ull << 52) | (a & 0xfffffffffffffull);
  const int shift = 52 - F::kMantBits + (e < F::kEmin ? F::kEmin - e : 0);
  if (shift > 53) return sign;  // below half the smallest subnormal
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((1ull << shift) - 1);
  const uint64_t half = 1ull << (shift - 1);
  q += (rem > half || (rem == half && (q & 1))) ? 1 : 0;
  // A carry out of the mantissa lands in the exponent field, as it should.
  const uint32_t code = e < F::kEmin
                            ? static_cast<uint32_t>(q)
                            : (static_cast<uint32_t>(e + F::kBias - 1) << F::kMantBits) + static_cast<uint32_t>(q);
  return code > F::kMaxFinite ? overflow : sign | code;
}

// Exact value of a narrow code as float bits (Half, Fp8E4M3, Fp8E5M2: their subnormals are
// normal floats, so this builds the float without arithmetic).
template <class F>
CC_HD inline uint32_t narrowToFloatBits(uint32_t code) {
  const uint32_t sign = (code & F::kSignBit) ? 0x80000000u : 0;
  uint32_t exp = (code >> F::kMantBits) & F::kExpMax;
  uint32_t mant = code & F::kMantMask;
  if (exp == F::kExpMax && (F::kIeee || mant == F::kMantMask)) {
    return sign | 0x7f800000u | (F::kIeee ? mant << (23 - F::kMantBits) : 0x400000u);
  }
  if (exp == 0) {
    if (mant == 0) return sign;
    int e = F::kEmin;
    while (!(mant & (1u << F::kMantBits))) {
      mant <<= 1;
      --e;
    }
    return sign | (static_cast<uint32_t>(e + 127) << 23) | ((mant & F::kMantMask) << (23 - F::kMantBits));
  }
  return sign | (static_cast<uint32_t>(static_cast<int>(exp) - F::kBias + 127) << 23) | (mant << (23 - F::kMantBits));
}

// Integer conversions saturate (NaN gives 0), like CUDA's __double2int_rz family: defined for
// every input, where a plain cast is undefined out of range.
template <class I>
CC_HD CC_FORCE_INLINE I saturatingToInt(double d) {
  constexpr int kBits = 8 * sizeof(I);
  using U = UintOfSize<sizeof(I)>;
  constexpr I kMax = std::is_signed_v<I> ? static_cast<I>(static_cast<U>(~U(0)) >> 1) : static_cast<I>(~U(0));
  constexpr I kMin = std::is_signed_v<I> ? static_cast<I>(-kMax - 1) : I(0);
  constexpr double kLo = std::is_signed_v<I> ? -static_cast<double>(1ull << (kBits - 1)) : 0.0;
  constexpr double kHi =
      std::is_signed_v<I> ? static_cast<double>(1ull << (kBits - 1)) : 2.0 * static_cast<double>(1ull << (kBits - 1));
  if (!(d == d)) return 0;
  if (d <= kLo) return kMin;
  if (d >= kHi) return kMax;
  return static_cast<I>(d);
}

// ---- conversions for every element type ---------------------------------------------------------

// c ? a : b as a mask, so that the compiler keeps it a select (and a loop of them vectorises)
// instead of branching around the float operations computed for one side only.
CC_HD CC_FORCE_INLINE uint32_t selectBits(bool c, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

// Half <-> float without branches (the same bits as narrowToFloatBits / the general rounding;
// tests/unit/device/dtypes_test.cc), so loops over them vectorise. To float: a normal half moves
// into place with its exponent rebiased (+112); a subnormal one is its code times 2^-24, an
// exact integer conversion and product (no subnormal float on the way, so DAZ cannot touch it);
// inf and NaN keep their payload.
CC_HD CC_FORCE_INLINE uint32_t halfToFloatBits(uint32_t h) {
  const uint32_t em = h & 0x7fffu;
  const uint32_t normal = (em << 13) + (112u << 23);
  const uint32_t special = 0x7f800000u | ((em & 0x3ffu) << 13);
  const uint32_t subnormal = bitCast<uint32_t>(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
  return ((h & 0x8000u) << 16) | selectBits(em >= 0x7c00u, special, selectBits(em >= 0x0400u, normal, subnormal));
}

// From float, nearest even: at or above 2^-14 on the bits (a carry goes into the exponent, and
// from 65520 up into the infinity code); below it, adding 0.5 puts the half subnormal's quantum
// 2^-24 at float's last place, so the float add does the rounding (the current rounding mode:
// nearest unless the application changed it). NaN: sign, top 10 payload bits, quiet when they
// are 0 (narrowNan); with kCanonicalNan, 0x7fff for every NaN (for results of arithmetic,
// reduce_ops.h), in the same select.
template <bool kCanonicalNan = false>
CC_HD CC_FORCE_INLINE uint16_t halfFromFloatBits(uint32_t u) {
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  const uint32_t subnormal = bitCast<uint32_t>(bitCast<float>(a) + 0.5f) - 0x3f000000u;
  const uint32_t finite = selectBits(a >= 0x38800000u, selectBits(normal < 0x7c00u, normal, 0x7c00u), subnormal);
  const uint32_t sign = (u >> 16) & 0x8000u;
  if constexpr (kCanonicalNan) {
    return static_cast<uint16_t>(selectBits(a > 0x7f800000u, 0x7fffu, sign | finite));
  } else {
    const uint32_t payload = (a >> 13) & 0x3ffu;
    const uint32_t nan = 0x7c00u | selectBits(payload != 0, payload, 0x200u);
    return static_cast<uint16_t>(sign | selectBits(a > 0x7f800000u, nan, finite));
  }
}

// Exact for the narrow floats; a plain conversion otherwise.
template <class T>
CC_HD CC_FORCE_INLINE float toFloat(T x) {
  static_assert(kIsElementType<T>, "not an element type");
  if constexpr (std::is_same_v<T, Bfloat16>) {
    return bitCast<float>(static_cast<uint32_t>(x.bits) << 16);
  } else if constexpr (std::is_same_v<T, Half>) {
    return bitCast<float>(halfToFloatBits(x.bits));
  } else if constexpr (kIsNarrowFloat<T>) {
    return bitCast<float>(narrowToFloatBits<NarrowFormatOf<T>>(x.bits));
  } else {
    return static_cast<float>(x);
  }
}

template <class T>
CC_HD CC_FORCE_INLINE double toDouble(T x) {
  if constexpr (kIsNarrowFloat<T>) {
    return static_cast<double>(toFloat(x));
  } else {
    static_assert(kIsElementType<T>, "not an element type");
    return static_cast<double>(x);
  }
}

template <class T>
CC_HD CC_FORCE_INLINE T fromDouble(double d) {
  static_assert(kIsElementType<T>, "not an element type");
  if constexpr (kIsNarrowFloat<T>) {
    using F = NarrowFormatOf<T>;
    using Bits = decltype(T::bits);
    const uint64_t u = bitCast<uint64_t>(d);
    if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
      return T{static_cast<Bits>(((u >> 63) ? F::kSignBit : 0) | narrowNan<F>(u & 0xfffffffffffffull))};
    }
    return T{static_cast<Bits>(narrowFromDoubleBits<F>(u))};
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(d);
  } else {
    return saturatingToInt<T>(d);
  }
}

// Bfloat16 is float's upper half: rounding to nearest even is an add on the bits (a carry into
// the exponent gives the next binade, or inf past the largest finite), and a NaN keeps its sign
// and top payload bits (narrowNan). Branch-free, so loops over it vectorise; the same bits as
// the general path (tests/unit/device/dtypes_test.cc checks every code's neighbourhood).
// kCanonicalNan: every NaN becomes 0x7fff instead (for results of arithmetic, reduce_ops.h), in
// the same select, so that the canonical NaN costs nothing extra.
template <bool kCanonicalNan = false>
CC_HD CC_FORCE_INLINE uint16_t bfloat16FromFloatBits(uint32_t u) {
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t payload = (u >> 16) & 0x7fu;
  const uint32_t nan = kCanonicalNan ? 0x7fffu : ((u >> 16) & 0xff80u) | (payload != 0 ? payload : 0x40u);
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// float -> double is exact, so this rounds once; NaNs are handled on the float's own bits
// because a float -> double conversion would quiet a signaling NaN and change its bits.
template <class T>
CC_HD CC_FORCE_INLINE T fromFloat(float f) {
  static_assert(kIsElementType<T>, "not an element type");
  if constexpr (std::is_same_v<T, Bfloat16>) {
    return T{bfloat16FromFloatBits(bitCast<uint32_t>(f))};
  } else if constexpr (std::is_same_v<T, Half>) {
    return T{halfFromFloatBits(bitCast<uint32_t>(f))};
  } else if constexpr (kIsNarrowFloat<T>) {
    using F = NarrowFormatOf<T>;
    using Bits = decltype(T::bits);
    const uint32_t u = bitCast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      return T{
          static_cast<Bits>(((u >> 31) ? F::kSignBit : 0) | narrowNan<F>(static_cast<uint64_t>(u & 0x7fffffu) << 29))};
    }
    return T{static_cast<Bits>(narrowFromDoubleBits<F>(bitCast<uint64_t>(static_cast<double>(f))))};
  } else if constexpr (std::is_same_v<T, float>) {
    return f;
  } else {
    return fromDouble<T>(static_cast<double>(f));
  }
}

}  // namespace collcomm::detail
