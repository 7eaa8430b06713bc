// reduceCopy over every dtype, functor shape and flag combination, on misaligned host buffers,
// split across simulated threads, at every vector level this CPU runs (device/host/simd_level.h),
// against an element-by-element reference built from the functor. Built at -O3, as the library is
// (tests/CMakeLists.txt), so that the loops under test are the vectorised ones.
// The device's loop (reduceCopyDevice: 16-byte packs strided by thread, scalar head and tail) runs
// here too, on the host, with simulated threads: the same sweep on element-aligned buffers, and
// the pack arithmetic (applyPack) against the host's scalar loop bit for bit on random bits.
#include "device/reduce_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "device/dtypes.h"
#include "device/host/simd_level.h"
#include "device/op_arg.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {
namespace {

constexpr unsigned char kSentinel = 0xa5;
constexpr size_t kGuard = 32;  // bytes before and after each buffer that must stay untouched

// A byte buffer holding n elements of T at a chosen byte offset from a 64-byte aligned base.
template <class T>
class Buffer {
 public:
  Buffer(size_t n, size_t offset) : n_(n), storage_(n * sizeof(T) + 2 * kGuard + 64 + offset, kSentinel) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
    const uintptr_t aligned = (base + kGuard + 63) / 64 * 64;
    begin_ = storage_.data() + (aligned - base) + offset;
  }
  T* ptr() { return reinterpret_cast<T*>(begin_); }
  T get(size_t i) const {
    T v;
    std::memcpy(&v, begin_ + i * sizeof(T), sizeof(T));
    return v;
  }
  void set(size_t i, T v) { std::memcpy(begin_ + i * sizeof(T), &v, sizeof(T)); }
  // True when every byte outside the n elements still holds the sentinel.
  bool guardsIntact() const {
    const unsigned char* end = begin_ + n_ * sizeof(T);
    for (const unsigned char* p = storage_.data(); p < begin_; ++p)
      if (*p != kSentinel) return false;
    for (const unsigned char* p = end; p < storage_.data() + storage_.size(); ++p)
      if (*p != kSentinel) return false;
    return true;
  }

 private:
  size_t n_;
  std::vector<unsigned char> storage_;
  unsigned char* begin_;
};

template <class T>
uint64_t bitsOf(T x) {
  return static_cast<uint64_t>(bitCast<UintOfSize<sizeof(T)>>(x));
}

struct Case {
  size_t n;
  size_t off0, off1, offDst0, offDst1;
  bool preOp0, preOp1, postOp;
  bool hasSrc1, hasDst1, inPlace;
  int nthreads;
};

// Byte offsets of the four buffers from their allocation's alignment.
struct Offsets {
  size_t src0, src1, dst0, dst1;
};

// The case for a length, offsets, a bit per flag (pre0, pre1, post, src1, dst1, in place) and a
// thread count.
Case caseOf(size_t n, const Offsets& o, int flags, int nthreads) {
  return Case{n,
              o.src0,
              o.src1,
              o.dst0,
              o.dst1,
              (flags & 1) != 0,
              (flags & 2) != 0,
              (flags & 4) != 0,
              (flags & 8) != 0,
              (flags & 16) != 0,
              (flags & 32) != 0,
              nthreads};
}

// kDevice: reduceCopyDevice (the device's thread-to-element map and packs) instead of reduceCopy.
template <bool kDevice, class Fn, class T>
void runCase(const Fn& fn, const Case& c) {
  SCOPED_TRACE(::testing::Message() << "n=" << c.n << " offsets=" << c.off0 << "," << c.off1 << "," << c.offDst0 << ","
                                    << c.offDst1 << " pre0=" << c.preOp0 << " pre1=" << c.preOp1 << " post=" << c.postOp
                                    << " src1=" << c.hasSrc1 << " dst1=" << c.hasDst1 << " inPlace=" << c.inPlace
                                    << " nthreads=" << c.nthreads);
  Buffer<T> src0(c.n, c.off0), src1(c.n, c.off1), dst0(c.n, c.offDst0), dst1(c.n, c.offDst1);
  std::vector<T> expected(c.n);
  // Floating types also get values with many mantissa bits, whose products round: a product
  // fused into the following sum (an FMA) gives different bits.
  const double scale = kIsFloating<T> ? 7.0 / 3.0 : 1.0;
  for (size_t i = 0; i < c.n; ++i) {
    const T a = fromDouble<T>(static_cast<double>(static_cast<int>(i * 7 % 23) - 11) * scale);
    const T b = fromDouble<T>(static_cast<double>(static_cast<int>(i * 5 % 19) - 9) / scale);
    src0.set(i, a);
    src1.set(i, b);
    T v = (c.preOp0 && Fn::kHasPreOp) ? fn.preOp(a) : a;
    if (c.hasSrc1) v = fn.reduce(v, (c.preOp1 && Fn::kHasPreOp) ? fn.preOp(b) : b);
    if (c.postOp && Fn::kHasPostOp) v = fn.postOp(v);
    expected[i] = v;
  }
  T* out0 = c.inPlace ? src0.ptr() : dst0.ptr();
  T* out1 = c.hasDst1 ? dst1.ptr() : nullptr;
  for (int tid = 0; tid < c.nthreads; ++tid) {
    if constexpr (kDevice) {
      reduceCopyDevice(fn, tid, c.nthreads, c.n, src0.ptr(), c.preOp0, c.hasSrc1 ? src1.ptr() : nullptr, c.preOp1, out0,
                       out1, c.postOp);
    } else {
      reduceCopy(fn, tid, c.nthreads, c.n, src0.ptr(), c.preOp0, c.hasSrc1 ? src1.ptr() : nullptr, c.preOp1, out0, out1,
                 c.postOp);
    }
  }
  const Buffer<T>& r0 = c.inPlace ? src0 : dst0;
  for (size_t i = 0; i < c.n; ++i) {
    ASSERT_EQ(bitsOf(r0.get(i)), bitsOf(expected[i])) << "dst0[" << i << "]";
    if (c.hasDst1) {
      ASSERT_EQ(bitsOf(dst1.get(i)), bitsOf(expected[i])) << "dst1[" << i << "]";
    }
  }
  ASSERT_TRUE(r0.guardsIntact());
  ASSERT_TRUE(dst1.guardsIntact());
  ASSERT_TRUE(src1.guardsIntact());
}

// The vector level for one scope; the one in use before comes back after.
class LevelScope {
 public:
  explicit LevelScope(SimdLevel level) : before_(hostSimdLevel()) { EXPECT_TRUE(setHostSimdLevel(level)); }
  ~LevelScope() { setHostSimdLevel(before_); }

 private:
  SimdLevel before_;
};

template <class Fn, class T>
void sweepAtLevel(const Fn& fn) {
  const Offsets offsets[] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {1, 0, 3, 2}};
  for (size_t n : {0, 1, 7, 1000})
    for (const Offsets& o : offsets)
      for (int flags = 0; flags < 64; ++flags)
        for (int nthreads : {1, 3}) {
          const Case c = caseOf(n, o, flags, nthreads);
          runCase<false, Fn, T>(fn, c);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

template <class Fn, class T>
void sweep(const Fn& fn) {
  for (SimdLevel level : supportedSimdLevels()) {
    SCOPED_TRACE(::testing::Message() << "vector level " << simdLevelName(level));
    LevelScope scope(level);
    sweepAtLevel<Fn, T>(fn);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

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
void sweepBoth(const Fn& fn) {
  sweep<Fn, T>(fn);
  if (::testing::Test::HasFatalFailure()) return;
  {
    SCOPED_TRACE("device loop");
    sweepDevice<Fn, T>(fn);
  }
  if (::testing::Test::HasFatalFailure()) return;
  SCOPED_TRACE("pack arithmetic");
  comparePackWithScalar<Fn, T>(fn);
}

template <class T>
class ReduceCopy : public ::testing::Test {};
using ElementTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, float, double,
                                      Bfloat16, Fp8E4M3, Fp8E5M2>;
TYPED_TEST_SUITE(ReduceCopy, ElementTypes);

TYPED_TEST(ReduceCopy, Sum) { sweepBoth<FuncSum<TypeParam>, TypeParam>(FuncSum<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Prod) { sweepBoth<FuncProd<TypeParam>, TypeParam>(FuncProd<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Max) { sweepBoth<FuncMax<TypeParam>, TypeParam>(FuncMax<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Min) { sweepBoth<FuncMin<TypeParam>, TypeParam>(FuncMin<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, PreMulSum) {
  using T = TypeParam;
  sweepBoth<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(3))));
  if constexpr (kIsFloating<T>) sweepBoth<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(0.1))));
}
TYPED_TEST(ReduceCopy, SumPostDiv) { sweepBoth<FuncSumPostDiv<TypeParam>, TypeParam>(FuncSumPostDiv<TypeParam>(3)); }

// Many threads on a short buffer: some get empty chunks, none writes outside its own.
TEST(ReduceCopyThreads, MoreThreadsThanElements) {
  Buffer<float> src(5, 1), dst(5, 2);
  for (size_t i = 0; i < 5; ++i) src.set(i, static_cast<float>(i));
  const FuncSum<float> fn(0);
  for (int tid = 0; tid < 64; ++tid)
    reduceCopy(fn, tid, 64, 5, src.ptr(), false, src.ptr(), false, dst.ptr(), nullptr, false);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(dst.get(i), 2.0f * i);
  EXPECT_TRUE(dst.guardsIntact());
}

// Each thread writes only its own part: run one thread, the rest of the output is untouched.
TEST(ReduceCopyThreads, ThreadsPartitionTheElements) {
  constexpr size_t kN = 1000;
  constexpr int kThreads = 4;
  std::vector<int> writes(kN, 0);
  for (int tid = 0; tid < kThreads; ++tid) {
    std::vector<int32_t> src(kN, 1), dst(kN, 0);
    reduceCopy(FuncSum<int32_t>(0), tid, kThreads, kN, src.data(), false, src.data(), false, dst.data(), nullptr,
               false);
    for (size_t i = 0; i < kN; ++i) {
      if (dst[i] == 2) {
        ++writes[i];
      } else {
        ASSERT_EQ(dst[i], 0);
      }
    }
  }
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(writes[i], 1) << i;
}

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
}  // namespace collcomm::detail
