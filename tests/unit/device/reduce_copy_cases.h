// What the reduceCopy tests share: guarded buffers at chosen offsets, one case of the sweep and
// its check against an element-by-element reference built from the functor, the vector level for a
// scope, and the element types. Included by reduce_copy_test.cc (the host loops, built at -O3) and
// reduce_copy_device_test.cc (the device loop run on the host).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/dtypes.h"
#include "device/host/simd_level.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"

namespace collcomm::detail::reduce_copy_test {


inline constexpr unsigned char kSentinel = 0xa5;
inline constexpr size_t kGuard = 32;  // bytes before and after each buffer that must stay untouched

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
inline Case caseOf(size_t n, const Offsets& o, int flags, int nthreads) {
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

using ElementTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, Half, float, double,
                                      Bfloat16, Fp8E4M3, Fp8E5M2>;

}  // namespace collcomm::detail::reduce_copy_test
