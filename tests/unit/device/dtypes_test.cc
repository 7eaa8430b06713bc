// Narrow float conversions (exhaustive round trips, rounding against an independent oracle) and
// the dtype list helpers.
#include "device/dtypes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace collcomm::detail {
namespace {

template <class T>
using Bits = decltype(T::bits);

template <class T>
constexpr uint32_t kCodeCount = 1u << (8 * sizeof(T));

// Value of a narrow code from its definition, independent of dtypes.h (NaN for NaN codes).
template <class T>
double referenceValue(uint32_t code) {
  using F = NarrowFormatOf<T>;
  const bool negative = code & F::kSignBit;
  const uint32_t exp = (code >> F::kMantBits) & F::kExpMax;
  const uint32_t mant = code & F::kMantMask;
  double v;
  if (F::kIeee && exp == F::kExpMax) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!F::kIeee && exp == F::kExpMax && mant == F::kMantMask) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), F::kEmin - F::kMantBits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -F::kMantBits), static_cast<int>(exp) - F::kBias);
  }
  return negative ? -v : v;
}

// Nearest-even rounding oracle: all non-negative finite values of T, sorted by code (which is
// also value order), searched for the nearest.
template <class T>
class RoundingOracle {
 public:
  RoundingOracle() {
    using F = NarrowFormatOf<T>;
    for (uint32_t c = 0; c <= F::kMaxFinite; ++c) values_.push_back(referenceValue<T>(c));
  }
  // Expected code for x (not NaN).
  uint32_t round(double x) const {
    using F = NarrowFormatOf<T>;
    const uint32_t sign = std::signbit(x) ? F::kSignBit : 0;
    const double a = std::fabs(x);
    const double maxv = values_.back();
    const double maxUlp = maxv - values_[values_.size() - 2];
    if (F::kSaturate) {
      if (a >= maxv) return sign | F::kMaxFinite;
    } else if (a >= maxv + maxUlp / 2) {  // max's mantissa is odd, so its upper tie goes to inf
      return sign | F::kInf;
    }
    if (a >= maxv) return sign | F::kMaxFinite;
    const auto it = std::lower_bound(values_.begin(), values_.end(), a);
    uint32_t hi = static_cast<uint32_t>(it - values_.begin());
    if (values_[hi] == a) return sign | hi;
    const uint32_t lo = hi - 1;
    const double dlo = a - values_[lo];
    const double dhi = values_[hi] - a;
    if (dlo < dhi) return sign | lo;
    if (dhi < dlo) return sign | hi;
    return sign | ((lo & 1) ? hi : lo);
  }
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> values_;
};

template <class T>
bool isNanCode(uint32_t code) {
  return std::isnan(referenceValue<T>(code));
}

template <class T>
class NarrowFloat : public ::testing::Test {};
using NarrowTypes = ::testing::Types<Half, Bfloat16, Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(NarrowFloat, NarrowTypes);

TYPED_TEST(NarrowFloat, EveryCodeIsExactInFloatAndRoundTrips) {
  using T = TypeParam;
  for (uint32_t c = 0; c < kCodeCount<T>; ++c) {
    const T x{static_cast<Bits<T>>(c)};
    const float f = toFloat(x);
    const double ref = referenceValue<T>(c);
    const bool negative = (c & NarrowFormatOf<T>::kSignBit) != 0;
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << c;
    } else {
      ASSERT_EQ(static_cast<double>(f), ref) << std::hex << c;
    }
    ASSERT_EQ(std::signbit(f), negative) << std::hex << c;  // -0 and -NaN keep their sign
    // Same bits back, NaN payloads included; but e5m2's infinities saturate to ±max (SATFINITE).
    const bool saturatedInf = NarrowFormatOf<T>::kSaturate && std::isinf(ref);
    const uint32_t back = saturatedInf ? (c & NarrowFormatOf<T>::kSignBit) | NarrowFormatOf<T>::kMaxFinite : c;
    ASSERT_EQ(fromFloat<T>(f).bits, back) << std::hex << c;
    // Through double (which quiets NaNs): same value back.
    const uint32_t viaDouble = fromDouble<T>(toDouble(x)).bits;
    if (std::isnan(ref)) {
      ASSERT_TRUE(isNanCode<T>(viaDouble)) << std::hex << c;
    } else {
      ASSERT_EQ(viaDouble, back) << std::hex << c;
    }
  }
}

// Midpoints between neighbours (ties) and the floats/doubles just around them, for every pair
// of neighbouring values, then random values over the whole range.
TYPED_TEST(NarrowFloat, RoundsToNearestEven) {
  using T = TypeParam;
  const RoundingOracle<T> oracle;
  const auto& v = oracle.values();
  auto check = [&](double x) {
    for (double s : {1.0, -1.0}) {
      const double d = s * x;
      ASSERT_EQ(fromDouble<T>(d).bits, oracle.round(d)) << "fromDouble(" << d << ")";
      const float f = static_cast<float>(d);
      ASSERT_EQ(fromFloat<T>(f).bits, oracle.round(f)) << "fromFloat(" << f << ")";
    }
  };
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const double mid = (v[i] + v[i + 1]) / 2;  // exact: both are short binary fractions
    check(mid);
    check(std::nextafter(mid, 0.0));
    check(std::nextafter(mid, 1e300));
    check(static_cast<double>(std::nextafter(static_cast<float>(mid), 0.0f)));
    check(static_cast<double>(std::nextafter(static_cast<float>(mid), 1e30f)));
    check(v[i]);
  }
  // Beyond the largest value: the upper midpoint and above.
  const double maxv = v.back();
  const double ulp = maxv - v[v.size() - 2];
  for (double x :
       {maxv, maxv + ulp / 4, std::nextafter(maxv + ulp / 2, 0.0), maxv + ulp / 2, maxv + ulp, 2 * maxv, 1e30, 1e300}) {
    check(x);
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-140, 20);
  for (int i = 0; i < 200000; ++i) check(std::ldexp(mant(rng), exp(rng)));
}

TYPED_TEST(NarrowFloat, SpecialValues) {
  using T = TypeParam;
  using F = NarrowFormatOf<T>;
  const double inf = std::numeric_limits<double>::infinity();
  const uint32_t posOverflow = F::kSaturate ? F::kMaxFinite : F::kInf;
  EXPECT_EQ(fromDouble<T>(inf).bits, posOverflow);
  EXPECT_EQ(fromDouble<T>(-inf).bits, F::kSignBit | posOverflow);
  EXPECT_EQ(fromFloat<T>(std::numeric_limits<float>::infinity()).bits, posOverflow);
  EXPECT_EQ(fromDouble<T>(0.0).bits, 0u);
  EXPECT_EQ(fromDouble<T>(-0.0).bits, F::kSignBit);
  EXPECT_EQ(fromDouble<T>(std::numeric_limits<double>::denorm_min()).bits, 0u);
  EXPECT_EQ(fromDouble<T>(-std::numeric_limits<double>::denorm_min()).bits, F::kSignBit);
  EXPECT_TRUE(isNanCode<T>(fromDouble<T>(std::numeric_limits<double>::quiet_NaN()).bits));
  EXPECT_TRUE(isNanCode<T>(fromDouble<T>(-std::numeric_limits<double>::quiet_NaN()).bits));
  EXPECT_TRUE(isNanCode<T>(fromFloat<T>(std::numeric_limits<float>::quiet_NaN()).bits));
  EXPECT_TRUE(isNanCode<T>(fromFloat<T>(std::numeric_limits<float>::signaling_NaN()).bits));
  // A float NaN whose payload sits below T's mantissa still converts to a NaN.
  EXPECT_TRUE(isNanCode<T>(fromFloat<T>(std::bit_cast<float>(0x7f800001u)).bits));
  EXPECT_TRUE(isNanCode<T>(fromDouble<T>(std::bit_cast<double>(0xfff0000000000001ull)).bits));
}

TEST(NarrowFloat, CraftedCases) {
  // binary16: max 65504, overflow to inf from the upper midpoint 65520, subnormals down to 2^-24.
  EXPECT_EQ(fromFloat<Half>(1.0f).bits, 0x3c00);
  EXPECT_EQ(fromFloat<Half>(65504.0f).bits, 0x7bff);
  EXPECT_EQ(fromFloat<Half>(65519.0f).bits, 0x7bff);
  EXPECT_EQ(fromFloat<Half>(65520.0f).bits, 0x7c00);
  EXPECT_EQ(fromFloat<Half>(-1e9f).bits, 0xfc00);
  EXPECT_EQ(fromDouble<Half>(0x1p-24).bits, 0x0001);
  EXPECT_EQ(fromDouble<Half>(0x1p-25).bits, 0x0000);                  // tie to even 0
  EXPECT_EQ(fromDouble<Half>(0x1.000002p-25).bits, 0x0001);           // just above the tie
  EXPECT_EQ(fromDouble<Half>(0x3p-25).bits, 0x0002);                  // 1.5 ulp: tie to even 2
  EXPECT_EQ(fromDouble<Half>(0x1.ffcp-15).bits, 0x0400);              // largest subnormal + 1/2 ulp -> min normal
  EXPECT_EQ(fromDouble<Half>(1.0 + 0x1p-11).bits, 0x3c00);            // tie -> even
  EXPECT_EQ(fromDouble<Half>(1.0 + 0x3p-11).bits, 0x3c02);            // tie -> even (up)
  EXPECT_EQ(fromDouble<Half>(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3c01);  // double rounding would miss this
  // bfloat16: float's exponent range, 8-bit significand; NaN kept.
  EXPECT_EQ(fromFloat<Bfloat16>(1.0f).bits, 0x3f80);
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // tie -> even
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);  // tie -> even (up)
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x3f808001u)).bits, 0x3f81);
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x7f7fffffu)).bits, 0x7f80);  // FLT_MAX -> inf
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x00000001u)).bits, 0x0000);  // tie to even 0
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x00008000u)).bits, 0x0000);  // tie to even 0
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x00018000u)).bits, 0x0002);  // subnormal tie up
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0x7fc00001u)).bits, 0x7fc0);
  EXPECT_EQ(fromFloat<Bfloat16>(std::bit_cast<float>(0xff800001u)).bits, 0xffc0);  // sNaN, payload below: quiet
  EXPECT_EQ(fromDouble<Bfloat16>(0x1p-133).bits, 0x0001);
  EXPECT_EQ(fromDouble<Bfloat16>(0x1p-134).bits, 0x0000);
  EXPECT_EQ(fromDouble<Bfloat16>(1e39).bits, 0x7f80);  // above float's range too
  // e4m3fn: max 448, saturating, NaN 0x7f; subnormals k * 2^-9.
  EXPECT_EQ(fromFloat<Fp8E4M3>(1.0f).bits, 0x38);
  EXPECT_EQ(fromFloat<Fp8E4M3>(448.0f).bits, 0x7e);
  EXPECT_EQ(fromFloat<Fp8E4M3>(464.0f).bits, 0x7e);
  EXPECT_EQ(fromFloat<Fp8E4M3>(480.0f).bits, 0x7e);
  EXPECT_EQ(fromFloat<Fp8E4M3>(-1e6f).bits, 0xfe);
  EXPECT_EQ(fromFloat<Fp8E4M3>(240.0f).bits, 0x77);
  EXPECT_EQ(fromFloat<Fp8E4M3>(17.0f).bits, 0x58);  // 16 + 1/2 ulp: tie to even 16
  EXPECT_EQ(fromFloat<Fp8E4M3>(19.0f).bits, 0x5a);  // tie to even 20
  EXPECT_EQ(fromDouble<Fp8E4M3>(0x1p-9).bits, 0x01);
  EXPECT_EQ(fromDouble<Fp8E4M3>(0x1p-10).bits, 0x00);
  EXPECT_EQ(fromDouble<Fp8E4M3>(0x1.8p-10).bits, 0x01);
  EXPECT_EQ(fromDouble<Fp8E4M3>(0x7p-9).bits, 0x07);   // largest subnormal
  EXPECT_EQ(fromDouble<Fp8E4M3>(0xfp-10).bits, 0x08);  // its upper tie: min normal
  EXPECT_EQ(fromFloat<Fp8E4M3>(std::numeric_limits<float>::infinity()).bits, 0x7e);
  EXPECT_EQ(fromFloat<Fp8E4M3>(-std::numeric_limits<float>::quiet_NaN()).bits, 0xff);
  EXPECT_EQ(toFloat(Fp8E4M3{0x7e}), 448.0f);
  EXPECT_EQ(toFloat(Fp8E4M3{0x01}), 0x1p-9f);
  EXPECT_TRUE(std::isnan(toFloat(Fp8E4M3{0x7f})));
  EXPECT_TRUE(std::isnan(toFloat(Fp8E4M3{0xff})));
  EXPECT_EQ(toFloat(Fp8E4M3{0x78}), 256.0f);  // exponent code 15 holds normals in e4m3fn
  // e5m2: max 57344, saturating, has inf/NaN codes.
  EXPECT_EQ(fromFloat<Fp8E5M2>(57344.0f).bits, 0x7b);
  EXPECT_EQ(fromFloat<Fp8E5M2>(61440.0f).bits, 0x7b);
  EXPECT_EQ(fromFloat<Fp8E5M2>(1e9f).bits, 0x7b);
  EXPECT_EQ(fromFloat<Fp8E5M2>(-std::numeric_limits<float>::infinity()).bits, 0xfb);
  EXPECT_EQ(fromDouble<Fp8E5M2>(0x1p-16).bits, 0x01);
  EXPECT_EQ(fromDouble<Fp8E5M2>(0x1p-17).bits, 0x00);
  EXPECT_EQ(fromFloat<Fp8E5M2>(1.25f).bits, 0x3d);
  EXPECT_EQ(fromFloat<Fp8E5M2>(1.125f).bits, 0x3c);  // tie to even
  EXPECT_EQ(fromFloat<Fp8E5M2>(1.375f).bits, 0x3e);  // tie to even
  EXPECT_EQ(toFloat(Fp8E5M2{0x7c}), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(toFloat(Fp8E5M2{0x7d})));
}

#ifdef __FLT16_MAX__
// The compiler's own binary16 conversions as a second oracle, over many float bit patterns.
TEST(NarrowFloat, HalfMatchesCompilerFloat16) {
  for (uint64_t u = 0; u < (1ull << 32); u += 997) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    const uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(fromFloat<Half>(f).bits, want) << std::hex << u;
    ASSERT_EQ(fromDouble<Half>(static_cast<double>(f) * 1.0000001).bits,
              std::bit_cast<uint16_t>(static_cast<_Float16>(static_cast<double>(f) * 1.0000001)))
        << std::hex << u;
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    const _Float16 h = std::bit_cast<_Float16>(static_cast<uint16_t>(c));
    if (h != h) continue;
    ASSERT_EQ(std::bit_cast<uint32_t>(toFloat(Half{static_cast<uint16_t>(c)})),
              std::bit_cast<uint32_t>(static_cast<float>(h)))
        << std::hex << c;
  }
}
#endif

// fromFloat<Bfloat16> rounds on the float's bits (bfloat16FromFloatBits); the general path rounds
// the exact double once (fromDouble). Around every bfloat16 code (ties, one either side, the
// ends of its range, some in between) and for every NaN pattern of the top bits they agree.
TEST(NarrowFloat, Bfloat16FromFloatMatchesTheGeneralRounding) {
  std::mt19937 rng(7);
  for (uint32_t code = 0; code < 65536; ++code) {
    const uint32_t lows[] = {
        0, 1, 0x3fff, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xffff, static_cast<uint32_t>(rng() & 0xffffu)};
    for (uint32_t low : lows) {
      const uint32_t u = code << 16 | low;
      const float f = std::bit_cast<float>(u);
      uint16_t want;
      if (std::isnan(f)) {  // sign, all-ones exponent, the top 7 payload bits, quiet when they are 0
        const uint32_t payload = (u >> 16) & 0x7f;
        want = static_cast<uint16_t>((u >> 16 & 0xff80) | (payload != 0 ? payload : 0x40));
      } else {
        want = fromDouble<Bfloat16>(static_cast<double>(f)).bits;
      }
      ASSERT_EQ(fromFloat<Bfloat16>(f).bits, want) << std::hex << u;
    }
  }
}

// The same for Half (halfFromFloatBits): every code's value, the floats either side of it, the
// ties between neighbouring codes and either side of them, from subnormals to past the largest
// finite; and NaN patterns.
TEST(NarrowFloat, HalfFromFloatMatchesTheGeneralRounding) {
  auto check = [](uint32_t u) {
    const float f = std::bit_cast<float>(u);
    uint16_t want;
    if (std::isnan(f)) {
      const uint32_t payload = (u >> 13) & 0x3ff;
      want = static_cast<uint16_t>((u >> 16 & 0x8000) | 0x7c00 | (payload != 0 ? payload : 0x200));
    } else {
      want = fromDouble<Half>(static_cast<double>(f)).bits;
    }
    return fromFloat<Half>(f).bits == want;
  };
  for (uint32_t code = 0; code < 0x7c00; ++code) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float v = toFloat(Half{static_cast<uint16_t>(sign | code)});
      const float next = toFloat(Half{static_cast<uint16_t>(sign | (code + 1))});
      const float tie = static_cast<float>((static_cast<double>(v) + static_cast<double>(next)) / 2);
      for (float x : {v, tie})
        for (int step = -2; step <= 2; ++step) {
          const uint32_t u = std::bit_cast<uint32_t>(x) + static_cast<uint32_t>(step);
          ASSERT_TRUE(check(u)) << std::hex << u;
        }
    }
  }
  for (uint32_t u : {0x7f800001u, 0x7fc00000u, 0xffc00000u, 0x7f802000u, 0x7fffffffu, 0x7f801fffu, 0x00000001u,
                     0x33000000u, 0x33000001u, 0x477ff000u, 0x477fefffu, 0x7f7fffffu})
    ASSERT_TRUE(check(u)) << std::hex << u;
}

TEST(IntegerConversions, SaturateAndTruncate) {
  EXPECT_EQ(fromDouble<int8_t>(127.9), 127);
  EXPECT_EQ(fromDouble<int8_t>(128.0), 127);
  EXPECT_EQ(fromDouble<int8_t>(-128.9), -128);
  EXPECT_EQ(fromDouble<int8_t>(-3.7), -3);
  EXPECT_EQ(fromDouble<uint8_t>(-1.0), 0);
  EXPECT_EQ(fromDouble<uint8_t>(255.5), 255);
  EXPECT_EQ(fromDouble<int32_t>(1e10), INT32_MAX);
  EXPECT_EQ(fromDouble<int32_t>(-1e10), INT32_MIN);
  EXPECT_EQ(fromDouble<uint32_t>(4294967295.0), UINT32_MAX);
  EXPECT_EQ(fromDouble<int64_t>(0x1p63), INT64_MAX);
  EXPECT_EQ(fromDouble<int64_t>(-0x1p63), INT64_MIN);
  EXPECT_EQ(fromDouble<int64_t>(0x1p62), int64_t{1} << 62);
  EXPECT_EQ(fromDouble<uint64_t>(0x1p64), UINT64_MAX);
  EXPECT_EQ(fromDouble<uint64_t>(0x1p63), uint64_t{1} << 63);
  EXPECT_EQ(fromDouble<int32_t>(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(fromFloat<uint32_t>(-std::numeric_limits<float>::infinity()), 0u);
  EXPECT_EQ(fromFloat<float>(1.5f), 1.5f);
  EXPECT_EQ(fromDouble<float>(1.0 + 0x1p-24), 1.0f);  // tie to even
  EXPECT_EQ(fromDouble<double>(0.1), 0.1);
  EXPECT_EQ(toDouble(int64_t{-5}), -5.0);
  EXPECT_EQ(toFloat(uint8_t{200}), 200.0f);
}

TEST(DtypeList, SizesNamesTraits) {
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int t = 0; t < ccNumTypes; ++t) {
    EXPECT_STREQ(dtypeName(static_cast<ccDataType_t>(t)), names[t]);
    EXPECT_EQ(dtypeSize(static_cast<ccDataType_t>(t)), sizes[t]);
  }
  EXPECT_EQ(dtypeSize(ccNumTypes), 0u);
  EXPECT_STREQ(dtypeName(ccNumTypes), "unknown");
  static_assert(dtypeSize(ccBfloat16) == 2);
  static_assert(std::is_same_v<DtypeTraits<ccHalf>::Type, Half>);
  static_assert(std::is_same_v<DtypeTraits<ccInt>::Type, int32_t>);
  static_assert(std::is_same_v<DtypeTraits<ccFloat8e5m2>::Type, Fp8E5M2>);
  EXPECT_TRUE(dtypeIsFloating(ccBfloat16));
  EXPECT_TRUE(dtypeIsFloating(ccFloat8e4m3));
  EXPECT_TRUE(dtypeIsFloating(ccDouble));
  EXPECT_FALSE(dtypeIsFloating(ccUint64));
  EXPECT_FALSE(dtypeIsFloating(ccInt8));
}

}  // namespace
}  // namespace collcomm::detail
