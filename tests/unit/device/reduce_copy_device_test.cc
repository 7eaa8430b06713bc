// The device's reduceCopy loop (reduceCopyDevice: 16-byte packs strided by thread, scalar head and
// tail) run on the host with simulated threads: the sweep of reduce_copy_test.cc on element-aligned
// buffers, the pack arithmetic (applyPack) against the host's scalar loop bit for bit on random
// bits, and the thread-to-element map. Built at -O1 (tests/CMakeLists.txt): the code under test is
// the device's, so the host's vectorisation does not matter here.
#include <random>

#include "unit/device/reduce_copy_cases.h"

#include "device/op_arg.h"

namespace collcomm::detail::reduce_copy_test {
namespace {

// The device's loop on element-aligned buffers (its contract): every pointer 16-byte aligned
// (packs from the first element), all at the same offset within 16 bytes (a scalar head first),
// and at different offsets (all scalar); lengths with partial unrolled rounds, a pack remainder
// and a scalar tail, for one thread, a few, and a warp.
template <class Fn, class T>
void sweepDevice(const Fn& fn) {
  constexpr size_t s = sizeof(T);
  const Offsets offsets[] = {{0, 0, 0, 0}, {s, s, s, s}, {16 - s, 16 - s, 16 - s, 16 - s}, {0, s, 0, 0}, {0, 0, 0, s}};
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, 16 / s + 1, size_t{1000}, size_t{4099}})
    for (const Offsets& o : offsets)
      for (int flags = 0; flags < 64; ++flags)
        for (int nthreads : {1, 3, 32}) {
          const Case c = caseOf(n, o, flags, nthreads);
          runCase<true, Fn, T>(fn, c);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

// Random bits (NaNs, infinities, subnormals and all) through applyPack and through the host's
// scalar loop (reduceCopy on one pack's elements, at the portable vector level) give the same bits
// for every choice of hooks.
template <class Fn, class T>
void comparePackWithScalar(const Fn& fn) {
  using U = UintOfSize<sizeof(T)>;
  constexpr int kElems = Pack<T>::kElems;
  std::mt19937_64 rng(12345);
  LevelScope scope(SimdLevel::kPortable);
  for (int round = 0; round < 200; ++round) {
    Pack<T> a, b;
    for (int j = 0; j < kElems; ++j) {
      a.elems[j] = bitCast<T>(static_cast<U>(rng()));
      b.elems[j] = bitCast<T>(static_cast<U>(rng()));
    }
    auto check = [&](auto kSrc1, auto kPre0, auto kPre1, auto kPost) {
      constexpr bool src1 = decltype(kSrc1)::value, pre0 = decltype(kPre0)::value;
      constexpr bool pre1 = decltype(kPre1)::value, post = decltype(kPost)::value;
      constexpr bool hasPre = Fn::kHasPreOp, hasPost = Fn::kHasPostOp;
      const Pack<T> r = applyPack < src1, pre0 && hasPre, pre1 && hasPre && src1, post && hasPost > (fn, a, b);
      T scalar[kElems];
      reduceCopy(fn, 0, 1, kElems, a.elems, pre0, src1 ? b.elems : nullptr, pre1, scalar, nullptr, post);
      for (int j = 0; j < kElems; ++j) {
        ASSERT_EQ(bitsOf(r.elems[j]), bitsOf(scalar[j]))
            << "element " << j << " of round " << round << " a=" << bitsOf(a.elems[j]) << " b=" << bitsOf(b.elems[j])
            << " src1=" << src1 << " pre0=" << pre0 << " pre1=" << pre1 << " post=" << post;
      }
    };
    using F = std::false_type;
    using Tr = std::true_type;
    check(F{}, F{}, F{}, F{});
    check(F{}, Tr{}, F{}, F{});
    check(F{}, F{}, F{}, Tr{});
    check(F{}, Tr{}, F{}, Tr{});
    check(Tr{}, F{}, F{}, F{});
    check(Tr{}, Tr{}, F{}, F{});
    check(Tr{}, F{}, Tr{}, F{});
    check(Tr{}, Tr{}, Tr{}, F{});
    check(Tr{}, F{}, F{}, Tr{});
    check(Tr{}, Tr{}, Tr{}, Tr{});
    if (::testing::Test::HasFatalFailure()) return;
  }
}

template <class Fn, class T>
void sweepDeviceAndPacks(const Fn& fn) {
  {
    SCOPED_TRACE("device loop");
    sweepDevice<Fn, T>(fn);
  }
  if (::testing::Test::HasFatalFailure()) return;
  SCOPED_TRACE("pack arithmetic");
  comparePackWithScalar<Fn, T>(fn);
}

template <class T>
class ReduceCopyDevice : public ::testing::Test {};
TYPED_TEST_SUITE(ReduceCopyDevice, ElementTypes);

TYPED_TEST(ReduceCopyDevice, Sum) { sweepDeviceAndPacks<FuncSum<TypeParam>, TypeParam>(FuncSum<TypeParam>(0)); }
TYPED_TEST(ReduceCopyDevice, Prod) { sweepDeviceAndPacks<FuncProd<TypeParam>, TypeParam>(FuncProd<TypeParam>(0)); }
TYPED_TEST(ReduceCopyDevice, Max) { sweepDeviceAndPacks<FuncMax<TypeParam>, TypeParam>(FuncMax<TypeParam>(0)); }
TYPED_TEST(ReduceCopyDevice, Min) { sweepDeviceAndPacks<FuncMin<TypeParam>, TypeParam>(FuncMin<TypeParam>(0)); }
TYPED_TEST(ReduceCopyDevice, PreMulSum) {
  using T = TypeParam;
  sweepDeviceAndPacks<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(3))));
  if constexpr (kIsFloating<T>) sweepDeviceAndPacks<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(0.1))));
}
TYPED_TEST(ReduceCopyDevice, SumPostDiv) { sweepDeviceAndPacks<FuncSumPostDiv<TypeParam>, TypeParam>(FuncSumPostDiv<TypeParam>(3)); }

// The device's map: each simulated thread writes only its own packs and elements, every element
// once, with a scalar head and tail around the packs.
TEST(ReduceCopyThreads, DeviceMapPartitionsTheElements) {
  constexpr size_t kN = 1000;
  for (int nthreads : {1, 5, 32}) {
    std::vector<int> writes(kN + 1, 0);
    for (int tid = 0; tid < nthreads; ++tid) {
      alignas(16) int32_t src[kN + 1], dst[kN + 1];
      for (size_t i = 0; i <= kN; ++i) src[i] = 1, dst[i] = 0;
      // One element in: a three-element head, packs, a one-element tail.
      reduceCopyDevice(FuncSum<int32_t>(0), tid, nthreads, kN, src + 1, false, src + 1, false, dst + 1, nullptr, false);
      for (size_t i = 0; i <= kN; ++i) {
        if (dst[i] == 2) {
          ++writes[i];
        } else {
          ASSERT_EQ(dst[i], 0);
        }
      }
    }
    ASSERT_EQ(writes[0], 0);
    for (size_t i = 1; i <= kN; ++i) ASSERT_EQ(writes[i], 1) << i << " of " << nthreads << " threads";
  }
}

}  // namespace
}  // namespace collcomm::detail::reduce_copy_test
