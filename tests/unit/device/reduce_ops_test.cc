// Reduction functors on every element type, on crafted values with exactly known results, and
// the public-op mapping of op_arg.h.
#include "device/reduce_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "device/dtypes.h"
#include "device/op_arg.h"

namespace collcomm::detail {
namespace {

template <class T>
uint64_t bitsOf(T x) {
  return static_cast<uint64_t>(bitCast<UintOfSize<sizeof(T)>>(x));
}
template <class T>
T val(double d) {
  return fromDouble<T>(d);
}
template <class T>
bool isNan(T x) {
  return std::isnan(toDouble(x));
}

// Same bits (so -0 differs from +0).
#define EXPECT_SAME(a, b) EXPECT_EQ(bitsOf(a), bitsOf(b)) << toDouble(a) << " vs " << toDouble(b)

template <class T>
class AllTypes : public ::testing::Test {};
using ElementTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, float, double,
                                      Bfloat16, Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(AllTypes, ElementTypes);

TYPED_TEST(AllTypes, ContractMembers) {
  using T = TypeParam;
  static_assert(!FuncSum<T>::kHasPreOp && !FuncSum<T>::kHasPostOp);
  static_assert(!FuncProd<T>::kHasPreOp && !FuncMax<T>::kHasPostOp && !FuncMin<T>::kHasPreOp);
  static_assert(FuncPreMulSum<T>::kHasPreOp && !FuncPreMulSum<T>::kHasPostOp);
  static_assert(!FuncSumPostDiv<T>::kHasPreOp && FuncSumPostDiv<T>::kHasPostOp);
  static_assert(std::is_same_v<typename RedOpFunc<RedOpKind::kPreMulSum, T>::Type, FuncPreMulSum<T>>);
  // Hooks that a functor does not have are identities.
  const T x = val<T>(5);
  EXPECT_SAME(FuncSum<T>(0).preOp(x), x);
  EXPECT_SAME(FuncMax<T>(0).postOp(x), x);
  EXPECT_SAME(FuncPreMulSum<T>(scalarOpArg(val<T>(3))).postOp(x), x);
  EXPECT_SAME(FuncSumPostDiv<T>(2).preOp(x), x);
}

TYPED_TEST(AllTypes, SmallIntegersAreExact) {
  using T = TypeParam;
  const FuncSum<T> sum(0);
  const FuncProd<T> prod(0);
  const FuncMin<T> mn(0);
  const FuncMax<T> mx(0);
  EXPECT_SAME(sum.reduce(val<T>(1), val<T>(2)), val<T>(3));
  EXPECT_SAME(sum.reduce(val<T>(0), val<T>(7)), val<T>(7));
  EXPECT_SAME(prod.reduce(val<T>(3), val<T>(5)), val<T>(15));
  EXPECT_SAME(prod.reduce(val<T>(6), val<T>(0)), val<T>(0));
  EXPECT_SAME(mn.reduce(val<T>(3), val<T>(5)), val<T>(3));
  EXPECT_SAME(mn.reduce(val<T>(5), val<T>(3)), val<T>(3));
  EXPECT_SAME(mx.reduce(val<T>(3), val<T>(5)), val<T>(5));
  EXPECT_SAME(mx.reduce(val<T>(5), val<T>(3)), val<T>(5));
  EXPECT_SAME(mx.reduce(val<T>(4), val<T>(4)), val<T>(4));
  if constexpr (!std::is_unsigned_v<T>) {
    EXPECT_SAME(sum.reduce(val<T>(-3), val<T>(5)), val<T>(2));
    EXPECT_SAME(prod.reduce(val<T>(-3), val<T>(5)), val<T>(-15));
    EXPECT_SAME(prod.reduce(val<T>(-3), val<T>(-5)), val<T>(15));
    EXPECT_SAME(mn.reduce(val<T>(-3), val<T>(2)), val<T>(-3));
    EXPECT_SAME(mx.reduce(val<T>(-3), val<T>(-2)), val<T>(-2));
  }
  // PreMulSum: scalar times each input, then a sum.
  const FuncPreMulSum<T> pms(scalarOpArg(val<T>(3)));
  EXPECT_SAME(pms.preOp(val<T>(5)), val<T>(15));
  EXPECT_SAME(pms.reduce(pms.preOp(val<T>(2)), pms.preOp(val<T>(4))), val<T>(18));
  // SumPostDiv.
  const FuncSumPostDiv<T> avg(4);
  EXPECT_SAME(avg.reduce(val<T>(6), val<T>(2)), val<T>(8));
  EXPECT_SAME(avg.postOp(val<T>(8)), val<T>(2));
}

TEST(IntegerOps, WrapAround) {
  EXPECT_EQ(FuncSum<int8_t>(0).reduce(127, 1), -128);
  EXPECT_EQ(FuncSum<int8_t>(0).reduce(-128, -1), 127);
  EXPECT_EQ(FuncSum<uint8_t>(0).reduce(255, 1), 0);
  EXPECT_EQ(FuncSum<int32_t>(0).reduce(INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(FuncSum<uint32_t>(0).reduce(UINT32_MAX, 2), 1u);
  EXPECT_EQ(FuncSum<int64_t>(0).reduce(INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(FuncSum<int64_t>(0).reduce(INT64_MIN, INT64_MIN), 0);
  EXPECT_EQ(FuncSum<uint64_t>(0).reduce(UINT64_MAX, 1), 0u);
  EXPECT_EQ(FuncProd<int8_t>(0).reduce(16, 16), 0);
  EXPECT_EQ(FuncProd<int8_t>(0).reduce(-128, -1), -128);
  EXPECT_EQ(FuncProd<int8_t>(0).reduce(100, 3), 44);  // 300 - 256
  EXPECT_EQ(FuncProd<uint8_t>(0).reduce(255, 255), 1);
  EXPECT_EQ(FuncProd<int32_t>(0).reduce(65536, 65536), 0);
  EXPECT_EQ(FuncProd<int32_t>(0).reduce(INT32_MIN, -1), INT32_MIN);
  EXPECT_EQ(FuncProd<uint32_t>(0).reduce(0x10001u, 0xffffu), 0xffffffffu);
  EXPECT_EQ(FuncProd<int64_t>(0).reduce(int64_t{1} << 62, 4), 0);
  EXPECT_EQ(FuncProd<int64_t>(0).reduce(INT64_MAX, 2), -2);
  EXPECT_EQ(FuncProd<uint64_t>(0).reduce(UINT64_MAX, UINT64_MAX), 1u);
  EXPECT_EQ(FuncMin<uint64_t>(0).reduce(UINT64_MAX, 0), 0u);
  EXPECT_EQ(FuncMax<int64_t>(0).reduce(INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(FuncMin<int8_t>(0).reduce(-128, 127), -128);
  EXPECT_EQ(FuncMax<uint8_t>(0).reduce(200, 100), 200);
  // PreMulSum on integers wraps too; the scalar is stored zero-extended.
  EXPECT_EQ(FuncPreMulSum<int8_t>(scalarOpArg(int8_t{-1})).preOp(-128), -128);
  EXPECT_EQ(FuncPreMulSum<int8_t>(0xff).preOp(5), -5);
  EXPECT_EQ(FuncPreMulSum<uint32_t>(scalarOpArg(uint32_t{0x80000000u})).preOp(2), 0u);
  EXPECT_EQ(FuncPreMulSum<int64_t>(scalarOpArg(int64_t{-2})).preOp(INT64_MIN / 2 - 1), INT64_MIN + 2);
}

TEST(IntegerOps, SumPostDivTruncatesTowardZero) {
  EXPECT_EQ(FuncSumPostDiv<int32_t>(2).postOp(7), 3);
  EXPECT_EQ(FuncSumPostDiv<int32_t>(2).postOp(-7), -3);
  EXPECT_EQ(FuncSumPostDiv<int32_t>(3).postOp(-1), 0);
  EXPECT_EQ(FuncSumPostDiv<int8_t>(4).postOp(-128), -32);
  EXPECT_EQ(FuncSumPostDiv<int8_t>(3).postOp(127), 42);
  EXPECT_EQ(FuncSumPostDiv<uint8_t>(4).postOp(255), 63);
  EXPECT_EQ(FuncSumPostDiv<uint32_t>(7).postOp(UINT32_MAX), UINT32_MAX / 7);
  EXPECT_EQ(FuncSumPostDiv<int64_t>(2).postOp(INT64_MIN), INT64_MIN / 2);
  EXPECT_EQ(FuncSumPostDiv<int64_t>(5).postOp(-9), -1);
  EXPECT_EQ(FuncSumPostDiv<uint64_t>(3).postOp(UINT64_MAX), UINT64_MAX / 3);
  EXPECT_EQ(FuncSumPostDiv<uint64_t>(1).postOp(UINT64_MAX), UINT64_MAX);
}

template <class T>
class FloatTypes : public ::testing::Test {};
using FloatingTypes = ::testing::Types<Half, float, double, Bfloat16, Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(FloatTypes, FloatingTypes);

TYPED_TEST(FloatTypes, MinMaxNaNAndSignedZero) {
  using T = TypeParam;
  const FuncMin<T> mn(0);
  const FuncMax<T> mx(0);
  const T nan = fromDouble<T>(std::numeric_limits<double>::quiet_NaN());
  const T pz = val<T>(0.0), nz = val<T>(-0.0);
  ASSERT_NE(bitsOf(pz), bitsOf(nz));
  EXPECT_SAME(mn.reduce(nan, val<T>(2)), val<T>(2));
  EXPECT_SAME(mn.reduce(val<T>(2), nan), val<T>(2));
  EXPECT_SAME(mx.reduce(nan, val<T>(-1)), val<T>(-1));
  EXPECT_SAME(mx.reduce(val<T>(-1), nan), val<T>(-1));
  EXPECT_TRUE(isNan(mn.reduce(nan, nan)));
  EXPECT_TRUE(isNan(mx.reduce(nan, nan)));
  EXPECT_SAME(mn.reduce(nz, pz), nz);
  EXPECT_SAME(mn.reduce(pz, nz), nz);
  EXPECT_SAME(mx.reduce(nz, pz), pz);
  EXPECT_SAME(mx.reduce(pz, nz), pz);
  EXPECT_SAME(mn.reduce(val<T>(-0.5), val<T>(0.25)), val<T>(-0.5));
  EXPECT_SAME(mx.reduce(val<T>(-0.5), val<T>(0.25)), val<T>(0.25));
  const T big = fromDouble<T>(std::numeric_limits<double>::infinity());  // inf, or max finite for fp8
  EXPECT_SAME(mx.reduce(big, val<T>(1)), big);
  EXPECT_SAME(mn.reduce(val<T>(-1e300), val<T>(1)), val<T>(-1e300));
}

// The exact NaN bits both executors give (reduce_ops.h): min/max return one operand's bits, of
// two NaNs the larger payload and then the positive one, in either operand order; arithmetic that
// yields NaN gives the canonical NaN (0x7fff, fp8 0x7f), whatever the payloads. The CUDA kernels
// compile this same source; an H100 run of the ring kernels once gave 0x7fc0/0xfe00 where the host
// gave 0x7fff, when of two NaNs the first won and the executors combined ranks in different orders.
template <class T>
void expectMinMaxBoth(unsigned a, unsigned b, unsigned want) {
  using Bits = decltype(T::bits);
  const T x{static_cast<Bits>(a)}, y{static_cast<Bits>(b)};
  for (int order = 0; order < 2; ++order) {
    const T p = order ? y : x, q = order ? x : y;
    EXPECT_EQ(FuncMin<T>(0).reduce(p, q).bits, want) << std::hex << "min " << unsigned(p.bits) << ", " << q.bits;
    EXPECT_EQ(FuncMax<T>(0).reduce(p, q).bits, want) << std::hex << "max " << unsigned(p.bits) << ", " << q.bits;
  }
}

TEST(NanBits, NarrowMinMaxReturnAnOperandInEitherOrder) {
  // Half: quiet 0x7e00, all-ones 0x7fff, signalling 0x7c01 / 0x7d00, negative 0xfe00 / 0xffff.
  expectMinMaxBoth<Half>(0x7fff, 0xfe00, 0x7fff);  // the H100 harness's Reduce case
  expectMinMaxBoth<Half>(0x7e00, 0xfe00, 0x7e00);  // sign only differs: the positive one
  expectMinMaxBoth<Half>(0xffff, 0x7e00, 0xffff);  // larger payload wins over the sign
  expectMinMaxBoth<Half>(0x7c01, 0x7e00, 0x7e00);  // quiet over signalling
  expectMinMaxBoth<Half>(0x7c01, 0x7d00, 0x7d00);  // two signalling NaNs: larger payload, kept signalling
  expectMinMaxBoth<Half>(0xfc01, 0x7c01, 0x7c01);
  expectMinMaxBoth<Half>(0x7d55, 0x7d55, 0x7d55);
  // A NaN and a number: the number, in either order (quiet or signalling, either sign).
  for (unsigned nan : {0x7e00u, 0x7fffu, 0x7c01u, 0xfe00u, 0xfd00u}) {
    expectMinMaxBoth<Half>(nan, 0x3c00, 0x3c00);  // 1
    expectMinMaxBoth<Half>(nan, 0xfc00, 0xfc00);  // -inf
    expectMinMaxBoth<Half>(nan, 0x8000, 0x8000);  // -0
  }
  // Bfloat16: quiet 0x7fc0, all-ones 0x7fff, signalling 0x7f81 / 0x7fa0, negative 0xffc0.
  expectMinMaxBoth<Bfloat16>(0x7fff, 0x7fc0, 0x7fff);  // the H100 harness's Reduce case
  expectMinMaxBoth<Bfloat16>(0x7fc0, 0xffc0, 0x7fc0);
  expectMinMaxBoth<Bfloat16>(0xffff, 0x7fc0, 0xffff);
  expectMinMaxBoth<Bfloat16>(0x7f81, 0x7fc0, 0x7fc0);
  expectMinMaxBoth<Bfloat16>(0x7f81, 0x7fa0, 0x7fa0);
  expectMinMaxBoth<Bfloat16>(0xff81, 0x7f81, 0x7f81);
  for (unsigned nan : {0x7fc0u, 0x7fffu, 0x7f81u, 0xffc0u, 0xffa0u}) {
    expectMinMaxBoth<Bfloat16>(nan, 0x3f80, 0x3f80);
    expectMinMaxBoth<Bfloat16>(nan, 0x7f80, 0x7f80);  // +inf
    expectMinMaxBoth<Bfloat16>(nan, 0x0000, 0x0000);
  }
  // Fp8: e4m3 has the NaNs 0x7f and 0xff only; e5m2 quiet 0x7e, signalling 0x7d.
  expectMinMaxBoth<Fp8E4M3>(0xff, 0x7f, 0x7f);
  expectMinMaxBoth<Fp8E4M3>(0xff, 0x38, 0x38);
  expectMinMaxBoth<Fp8E5M2>(0x7d, 0x7e, 0x7e);
  expectMinMaxBoth<Fp8E5M2>(0xff, 0x7e, 0xff);
  expectMinMaxBoth<Fp8E5M2>(0xfe, 0x7e, 0x7e);
  expectMinMaxBoth<Fp8E5M2>(0x7d, 0x3c, 0x3c);
}

// min/max fold a rank's worth of NaN-heavy values to the same bits in any order (commutative and
// associative, NaNs included), as the ring's chain, the one-shot rank order and the GPU each use
// their own order.
template <class T>
void expectOrderFree(const std::vector<unsigned>& codes) {
  using Bits = decltype(T::bits);
  std::vector<T> v;
  for (unsigned c : codes) v.push_back(T{static_cast<Bits>(c)});
  auto fold = [&](auto fn, const std::vector<size_t>& order) {
    T acc = v[order[0]];
    for (size_t i = 1; i < order.size(); ++i) acc = fn.reduce(acc, v[order[i]]);
    return acc.bits;
  };
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto wantMin = fold(FuncMin<T>(0), order), wantMax = fold(FuncMax<T>(0), order);
  uint64_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    for (size_t i = order.size() - 1; i > 0; --i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(order[i], order[(state >> 33) % (i + 1)]);
    }
    ASSERT_EQ(fold(FuncMin<T>(0), order), wantMin);
    ASSERT_EQ(fold(FuncMax<T>(0), order), wantMax);
  }
}

TEST(NanBits, NarrowMinMaxOfManyRanksIgnoreTheOrder) {
  expectOrderFree<Half>({0x7fff, 0xfe00, 0x7e00, 0x7c01, 0xffff, 0x7d00});
  expectOrderFree<Half>({0x7fff, 0xfe00, 0x3c00, 0x7c01, 0xbc00, 0x8000, 0x0000});
  expectOrderFree<Bfloat16>({0x7fc0, 0x7fff, 0xffc0, 0x7f81, 0xffff});
  expectOrderFree<Bfloat16>({0x7fc0, 0x7fff, 0x3f80, 0x0000, 0x8000, 0xff80});
  expectOrderFree<Fp8E4M3>({0x7f, 0xff, 0x7f, 0xff});
  expectOrderFree<Fp8E5M2>({0x7d, 0x7e, 0xfe, 0xff, 0x7c});
}

TEST(NanBits, NarrowArithmeticGivesTheCanonicalNan) {
  // Half: a NaN operand of any payload and sign, signalling or quiet, or inf - inf, 0 * inf.
  for (unsigned nan : {0x7e00u, 0x7c01u, 0xfe00u, 0xfd55u, 0x7fffu}) {
    const Half n{static_cast<uint16_t>(nan)};
    EXPECT_EQ(FuncSum<Half>(0).reduce(n, val<Half>(1)).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSum<Half>(0).reduce(val<Half>(1), n).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSum<Half>(0).reduce(n, Half{0xfe00}).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncProd<Half>(0).reduce(n, val<Half>(2)).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncPreMulSum<Half>(scalarOpArg(val<Half>(0.5))).preOp(n).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncPreMulSum<Half>(scalarOpArg(n)).preOp(val<Half>(3)).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSumPostDiv<Half>(3).postOp(n).bits, 0x7fff) << std::hex << nan;
  }
  EXPECT_EQ(FuncSum<Half>(0).reduce(Half{0x7c00}, Half{0xfc00}).bits, 0x7fff);
  EXPECT_EQ(FuncProd<Half>(0).reduce(Half{0x0000}, Half{0xfc00}).bits, 0x7fff);
  // Bfloat16.
  for (unsigned nan : {0x7fc0u, 0x7f81u, 0xffc0u, 0xffa5u, 0x7fffu}) {
    const Bfloat16 n{static_cast<uint16_t>(nan)};
    EXPECT_EQ(FuncSum<Bfloat16>(0).reduce(n, val<Bfloat16>(1)).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSum<Bfloat16>(0).reduce(val<Bfloat16>(1), n).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSum<Bfloat16>(0).reduce(n, Bfloat16{0xffc0}).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncProd<Bfloat16>(0).reduce(n, val<Bfloat16>(2)).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncPreMulSum<Bfloat16>(scalarOpArg(val<Bfloat16>(0.5))).preOp(n).bits, 0x7fff) << std::hex << nan;
    EXPECT_EQ(FuncSumPostDiv<Bfloat16>(3).postOp(n).bits, 0x7fff) << std::hex << nan;
  }
  EXPECT_EQ(FuncSum<Bfloat16>(0).reduce(Bfloat16{0x7f80}, Bfloat16{0xff80}).bits, 0x7fff);
  EXPECT_EQ(FuncProd<Bfloat16>(0).reduce(Bfloat16{0x8000}, Bfloat16{0x7f80}).bits, 0x7fff);
  // Fp8: 0x7f for both formats.
  for (unsigned nan : {0x7fu, 0xffu}) {
    const Fp8E4M3 n{static_cast<uint8_t>(nan)};
    EXPECT_EQ(FuncSum<Fp8E4M3>(0).reduce(n, val<Fp8E4M3>(1)).bits, 0x7f) << std::hex << nan;
    EXPECT_EQ(FuncProd<Fp8E4M3>(0).reduce(val<Fp8E4M3>(2), n).bits, 0x7f) << std::hex << nan;
    EXPECT_EQ(FuncSumPostDiv<Fp8E4M3>(2).postOp(n).bits, 0x7f) << std::hex << nan;
  }
  for (unsigned nan : {0x7du, 0x7eu, 0xfdu, 0xffu}) {
    const Fp8E5M2 n{static_cast<uint8_t>(nan)};
    EXPECT_EQ(FuncSum<Fp8E5M2>(0).reduce(n, val<Fp8E5M2>(1)).bits, 0x7f) << std::hex << nan;
    EXPECT_EQ(FuncProd<Fp8E5M2>(0).reduce(val<Fp8E5M2>(2), n).bits, 0x7f) << std::hex << nan;
    EXPECT_EQ(FuncPreMulSum<Fp8E5M2>(scalarOpArg(val<Fp8E5M2>(0.5))).preOp(n).bits, 0x7f) << std::hex << nan;
  }
  EXPECT_EQ(FuncSum<Fp8E5M2>(0).reduce(Fp8E5M2{0x7c}, Fp8E5M2{0xfc}).bits, 0x7f);  // inf - inf
}

TYPED_TEST(FloatTypes, PreMulSumByHalf) {
  using T = TypeParam;
  const FuncPreMulSum<T> f(scalarOpArg(val<T>(0.5)));
  EXPECT_SAME(f.preOp(val<T>(3)), val<T>(1.5));
  EXPECT_SAME(f.preOp(val<T>(-8)), val<T>(-4));
  EXPECT_SAME(f.reduce(f.preOp(val<T>(3)), f.preOp(val<T>(5))), val<T>(4));
  EXPECT_TRUE(isNan(f.preOp(fromDouble<T>(std::numeric_limits<double>::quiet_NaN()))));
  EXPECT_SAME(f.preOp(val<T>(-0.0)), val<T>(-0.0));
}

TEST(FloatOps, PreMulSumRoundsTheProduct) {
  // The smallest subnormal times 0.5 is a tie between 0 and itself: even is 0.
  EXPECT_EQ(FuncPreMulSum<Half>(scalarOpArg(val<Half>(0.5))).preOp(Half{0x0001}).bits, 0x0000);
  EXPECT_EQ(FuncPreMulSum<Half>(scalarOpArg(val<Half>(0.5))).preOp(Half{0x0003}).bits, 0x0002);
  EXPECT_EQ(FuncPreMulSum<Fp8E4M3>(scalarOpArg(val<Fp8E4M3>(0.5))).preOp(Fp8E4M3{0x01}).bits, 0x00);
  EXPECT_EQ(FuncPreMulSum<Fp8E5M2>(scalarOpArg(val<Fp8E5M2>(0.5))).preOp(Fp8E5M2{0x81}).bits, 0x80);
  EXPECT_EQ(FuncPreMulSum<float>(scalarOpArg(0.5f)).preOp(std::numeric_limits<float>::denorm_min()), 0.0f);
  EXPECT_EQ(FuncPreMulSum<double>(scalarOpArg(0.1)).preOp(3.0), 3.0 * 0.1);
  // Scalar 1/3 rounded to binary16 (0x3555) times 3.
  EXPECT_EQ(FuncPreMulSum<Half>(0x3555).preOp(val<Half>(3)).bits, fromDouble<Half>(3.0 * toDouble(Half{0x3555})).bits);
  // fp8 saturates: 448 * 2.
  EXPECT_EQ(FuncPreMulSum<Fp8E4M3>(scalarOpArg(val<Fp8E4M3>(2))).preOp(val<Fp8E4M3>(448)).bits, 0x7e);
}

TEST(FloatOps, NarrowSumsAndProductsRoundOnce) {
  const FuncSum<Half> hs(0);
  EXPECT_EQ(toDouble(hs.reduce(val<Half>(2048), val<Half>(1))), 2048);    // tie to even
  EXPECT_EQ(toDouble(hs.reduce(val<Half>(2048), val<Half>(3))), 2052);    // tie to even (up)
  EXPECT_EQ(hs.reduce(val<Half>(65504), val<Half>(65504)).bits, 0x7c00);  // overflow: inf
  EXPECT_EQ(hs.reduce(val<Half>(65504), val<Half>(16)).bits, 0x7c00);     // the upper tie: inf
  EXPECT_EQ(hs.reduce(val<Half>(65504), val<Half>(8)).bits, 0x7bff);
  // Just above the tie 1 + 2^-11: one rounding of the exact sum goes up.
  EXPECT_EQ(hs.reduce(val<Half>(1), Half{0x1001}).bits, 0x3c01);  // 0x1001 = 2^-11 + 2^-21
  EXPECT_EQ(hs.reduce(Half{0x0001}, Half{0x8001}).bits, 0x0000);  // x + -x = +0
  EXPECT_EQ(FuncProd<Half>(0).reduce(val<Half>(256), val<Half>(256)).bits, 0x7c00);
  EXPECT_EQ(FuncProd<Half>(0).reduce(val<Half>(-256), val<Half>(256)).bits, 0xfc00);
  EXPECT_EQ(FuncProd<Half>(0).reduce(Half{0x3c01}, Half{0x3c01}).bits, 0x3c02);  // (1+2^-10)^2 = 1+2^-9+2^-20

  const FuncSum<Bfloat16> bs(0);
  EXPECT_EQ(toDouble(bs.reduce(val<Bfloat16>(256), val<Bfloat16>(1))), 256);
  EXPECT_EQ(toDouble(bs.reduce(val<Bfloat16>(256), val<Bfloat16>(3))), 260);
  EXPECT_EQ(bs.reduce(val<Bfloat16>(1), val<Bfloat16>(0x1p-100)).bits, 0x3f80);
  EXPECT_EQ(bs.reduce(Bfloat16{0x7f7f}, Bfloat16{0x7f7f}).bits, 0x7f80);  // overflow: inf
  EXPECT_EQ(FuncProd<Bfloat16>(0).reduce(Bfloat16{0x3f81}, Bfloat16{0x3f81}).bits, 0x3f82);
  EXPECT_TRUE(isNan(bs.reduce(Bfloat16{0x7fc0}, val<Bfloat16>(1))));
  EXPECT_TRUE(isNan(bs.reduce(Bfloat16{0x7f80}, Bfloat16{0xff80})));  // inf - inf

  const FuncSum<Fp8E4M3> e4(0);
  EXPECT_EQ(e4.reduce(val<Fp8E4M3>(448), val<Fp8E4M3>(448)).bits, 0x7e);  // saturates
  EXPECT_EQ(e4.reduce(val<Fp8E4M3>(-448), val<Fp8E4M3>(-32)).bits, 0xfe);
  EXPECT_EQ(toDouble(e4.reduce(val<Fp8E4M3>(16), val<Fp8E4M3>(1))), 16);  // tie to even
  EXPECT_EQ(toDouble(e4.reduce(val<Fp8E4M3>(18), val<Fp8E4M3>(1))), 20);  // tie to even (up)
  EXPECT_EQ(FuncProd<Fp8E4M3>(0).reduce(val<Fp8E4M3>(32), val<Fp8E4M3>(32)).bits, 0x7e);
  EXPECT_TRUE(isNan(e4.reduce(Fp8E4M3{0x7f}, val<Fp8E4M3>(1))));

  const FuncSum<Fp8E5M2> e5(0);
  EXPECT_EQ(e5.reduce(val<Fp8E5M2>(57344), val<Fp8E5M2>(57344)).bits, 0x7b);  // saturates
  EXPECT_EQ(e5.reduce(Fp8E5M2{0x7c}, val<Fp8E5M2>(1)).bits, 0x7b);            // inf + 1 saturates too
  EXPECT_TRUE(isNan(e5.reduce(Fp8E5M2{0x7c}, Fp8E5M2{0xfc})));
  EXPECT_EQ(toDouble(e5.reduce(val<Fp8E5M2>(1), val<Fp8E5M2>(0.125))), 1);  // tie to even
  EXPECT_EQ(toDouble(e5.reduce(val<Fp8E5M2>(1.25), val<Fp8E5M2>(0.125))), 1.5);

  EXPECT_EQ(FuncSum<float>(0).reduce(1.0f, 0x1p-24f), 1.0f);
  EXPECT_EQ(FuncSum<double>(0).reduce(1.0, 0x1p-53), 1.0);
  EXPECT_EQ(FuncProd<float>(0).reduce(0x1p100f, 0x1p100f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(FuncSumPostDiv<float>(4).postOp(10.0f), 2.5f);
  EXPECT_EQ(FuncSumPostDiv<Half>(3).postOp(val<Half>(1)).bits, 0x3555);
}

// Bfloat16 sums and Half sums and products compute in float (reduce_ops.h); they must give the
// bits of the exact result rounded once, which double computes (a Half sum or product and a
// Bfloat16 sum of operands at most 45 binades apart are exact in double; farther apart, the
// smaller is far below a tie either way). Operands: every pair of a set of special codes, then
// random pairs, half of them with close exponents (where the result is inexact in T and ties
// occur).
template <class Fn, class T>
void expectRoundedOnce(const char* what, const std::vector<uint16_t>& specials, uint16_t expMask, int mantBits,
                       double (*exact)(double, double)) {
  const Fn fn(0);
  auto check = [&](uint16_t a, uint16_t b) {
    const T x{a}, y{b};
    const T want = fromDouble<T>(exact(toDouble(x), toDouble(y)));
    const T got = fn.reduce(x, y);
    if (isNan(want)) return isNan(got);
    return got.bits == want.bits;
  };
  for (uint16_t a : specials)
    for (uint16_t b : specials) ASSERT_TRUE(check(a, b)) << what << std::hex << a << ", " << b;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  const uint32_t one = 1u << mantBits;  // one binade in the code
  for (int i = 0; i < 1 << 22; ++i) {
    const uint32_t r = next(), s = next();
    const uint16_t a = static_cast<uint16_t>(r);
    // Odd draws: b within 8 binades of a (random sign and mantissa).
    const uint32_t exp = ((a & expMask) + (s >> 16 & 0xf) * one - 8 * one) & expMask;
    const uint16_t near = static_cast<uint16_t>((s & ~static_cast<uint32_t>(expMask) & 0xffff) | exp);
    const uint16_t b = (i & 1) ? near : static_cast<uint16_t>(r >> 16);
    ASSERT_TRUE(check(a, b)) << what << std::hex << a << ", " << b;
  }
}

TEST(FloatOps, NarrowArithmeticInFloatRoundsLikeTheExactResult) {
  std::vector<uint16_t> bf, half;
  for (uint16_t sign : {0x0000, 0x8000}) {
    for (uint16_t mag : {0x0000, 0x0001, 0x0002, 0x007f, 0x0080, 0x0081, 0x00ff, 0x0100, 0x3f80, 0x3f81, 0x3fff,
                         0x4000, 0x4b00, 0x4b7f, 0x3380, 0x3b80, 0x7f00, 0x7f7e, 0x7f7f, 0x7f80, 0x7f81, 0x7fc0})
      bf.push_back(static_cast<uint16_t>(sign | mag));
    for (uint16_t mag : {0x0000, 0x0001, 0x0002, 0x01ff, 0x0200, 0x03ff, 0x0400, 0x0401, 0x07ff, 0x0800, 0x1000, 0x1001,
                         0x3c00, 0x3c01, 0x3fff, 0x4000, 0x6400, 0x67ff, 0x7bfe, 0x7bff, 0x7c00, 0x7c01, 0x7e00})
      half.push_back(static_cast<uint16_t>(sign | mag));
  }
  auto add = [](double x, double y) { return x + y; };
  auto mul = [](double x, double y) { return x * y; };
  expectRoundedOnce<FuncSum<Bfloat16>, Bfloat16>("bfloat16 sum ", bf, 0x7f80, 7, add);
  expectRoundedOnce<FuncSum<Half>, Half>("half sum ", half, 0x7c00, 10, add);
  expectRoundedOnce<FuncProd<Half>, Half>("half product ", half, 0x7c00, 10, mul);
}

TEST(OpArg, PublicOpsMap) {
  for (int t = 0; t < ccNumTypes; ++t) {
    const auto type = static_cast<ccDataType_t>(t);
    EXPECT_EQ(makeOpArg(ccSum, type, 4).kind, RedOpKind::kSum);
    EXPECT_EQ(makeOpArg(ccProd, type, 4).kind, RedOpKind::kProd);
    EXPECT_EQ(makeOpArg(ccMax, type, 4).kind, RedOpKind::kMax);
    EXPECT_EQ(makeOpArg(ccMin, type, 4).kind, RedOpKind::kMin);
    EXPECT_EQ(makeOpArg(ccAvg, type, 4).kind, dtypeIsFloating(type) ? RedOpKind::kPreMulSum : RedOpKind::kSumPostDiv);
    // The kernel tables and the host dispatch hold only reachable kinds: every op must map to one.
    for (int op = 0; op < ccNumOps; ++op)
      EXPECT_TRUE(redOpKindReachable(type, makeOpArg(static_cast<ccRedOp_t>(op), type, 4).kind)) << t << " " << op;
    const uint64_t one = 1;
    EXPECT_TRUE(redOpKindReachable(type, makePreMulSumOpArg(type, &one).kind)) << t;
  }
  EXPECT_FALSE(redOpKindReachable(ccFloat, RedOpKind::kSumPostDiv));
  EXPECT_EQ(makeOpArg(ccAvg, ccInt32, 7).opArg, 7u);
  EXPECT_EQ(makeOpArg(ccAvg, ccUint8, 3).opArg, 3u);
  EXPECT_EQ(makeOpArg(ccAvg, ccFloat, 4).opArg, scalarOpArg(0.25f));
  EXPECT_EQ(makeOpArg(ccAvg, ccDouble, 3).opArg, scalarOpArg(1.0 / 3));
  EXPECT_EQ(makeOpArg(ccAvg, ccHalf, 3).opArg, 0x3555u);
  EXPECT_EQ(makeOpArg(ccAvg, ccBfloat16, 2).opArg, 0x3f00u);
  EXPECT_EQ(makeOpArg(ccAvg, ccFloat8e4m3, 2).opArg, 0x30u);
  EXPECT_EQ(makeOpArg(ccAvg, ccFloat8e5m2, 4).opArg, 0x34u);
  EXPECT_EQ(makeOpArg(ccAvg, ccFloat8e4m3, 2048).opArg, 0u);  // 1/2048 < half the smallest subnormal
  // Averaging through the functors gives the mean of crafted inputs.
  const RedOpSpec avg = makeOpArg(ccAvg, ccFloat, 4);
  const FuncPreMulSum<float> f(avg.opArg);
  EXPECT_EQ(f.reduce(f.reduce(f.preOp(1), f.preOp(2)), f.reduce(f.preOp(3), f.preOp(6))), 3.0f);
  EXPECT_STREQ(redOpKindName(RedOpKind::kSumPostDiv), "SumPostDiv");
  static_assert(kRedOpKindCount == 6);
}

TEST(OpArg, UserPreMulSumScalar) {
  const Half h = val<Half>(0.5);
  EXPECT_EQ(makePreMulSumOpArg(ccHalf, &h).opArg, 0x3800u);
  EXPECT_EQ(makePreMulSumOpArg(ccHalf, &h).kind, RedOpKind::kPreMulSum);
  const int8_t i8 = -2;
  EXPECT_EQ(makePreMulSumOpArg(ccInt8, &i8).opArg, 0xfeu);  // zero-extended
  EXPECT_EQ(FuncPreMulSum<int8_t>(makePreMulSumOpArg(ccInt8, &i8).opArg).preOp(3), -6);
  alignas(8) unsigned char buf[16] = {};
  const double d = -1.5;
  std::memcpy(buf + 3, &d, sizeof d);  // misaligned scalar
  EXPECT_EQ(makePreMulSumOpArg(ccDouble, buf + 3).opArg, scalarOpArg(d));
  EXPECT_EQ(FuncPreMulSum<double>(makePreMulSumOpArg(ccDouble, buf + 3).opArg).preOp(2.0), -3.0);
  const float f = 0.25f;
  EXPECT_EQ(FuncPreMulSum<float>(makePreMulSumOpArg(ccFloat, &f).opArg).preOp(8.0f), 2.0f);
}

}  // namespace
}  // namespace collcomm::detail
