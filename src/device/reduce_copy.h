// reduceCopy: the element loop at the bottom of every primitive (data path). Loads one or two
// sources, applies the functor's preOp/reduce/postOp, stores to one or two destinations.
// Device code: g++ (host executor) and nvcc (kernels).
#pragma once

#include <cstddef>
#include <type_traits>

#include "common/host_device.h"
#include "device/dtypes.h"
#include "device/reduce_copy_packs.h"
#include "device/reduce_ops.h"

// The host compiles the element loop once per vector level and picks one at run time
// (device/host/simd_level.h); nvcc's host pass and other architectures keep the one loop.
#if !CC_DEVICE_COMPILE && !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__)
#define CC_HOST_SIMD_DISPATCH 1
#include "device/host/simd_level.h"
#else
#define CC_HOST_SIMD_DISPATCH 0
#endif

namespace collcomm::detail {

// The elements [begin, end) with stride step, every choice fixed at compile time so that the host
// loop (step 1) has no branches left and vectorises.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyLoop(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0,
                                          const T* src1, T* dst0, T* dst1) {
#if !CC_DEVICE_COMPILE
  (void)step;  // always 1 on the host
  for (size_t i = begin; i < end; ++i) {
#else
  for (size_t i = begin; i < end; i += step) {
#endif
    T v = loadElem(src0, i);
    if constexpr (kPre0) v = fn.preOp(v);
    if constexpr (kSrc1) {
      T w = loadElem(src1, i);
      if constexpr (kPre1) w = fn.preOp(w);
      v = fn.reduce(v, w);
    }
    if constexpr (kPost) v = fn.postOp(v);
    storeElem(dst0, i, v);
    if constexpr (kDst1) storeElem(dst1, i, v);
  }
}

#if CC_HOST_SIMD_DISPATCH
// The same loop, inlined into functions compiled for wider vectors: the compiler vectorises it
// again for each. Only called where hostSimdLevel() says the CPU has them.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
__attribute__((target("avx2"))) void reduceCopyLoopAvx2(const Fn& fn, size_t begin, size_t end, const T* src0,
                                                        const T* src1, T* dst0, T* dst1) {
  reduceCopyLoop<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, 1, src0, src1, dst0, dst1);
}
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void reduceCopyLoopAvx512(
    const Fn& fn, size_t begin, size_t end, const T* src0, const T* src1, T* dst0, T* dst1) {
  reduceCopyLoop<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, 1, src0, src1, dst0, dst1);
}
#endif

// reduceCopyLoop at the host's vector level (the device has one).
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyLoopAtLevel(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0,
                                                 const T* src1, T* dst0, T* dst1) {
#if CC_HOST_SIMD_DISPATCH
  // Fp8 converts through double element by element: wider vectors do not speed it up (its sums
  // alike at every level), so it has the one loop. Half's and Bfloat16's conversions are
  // branch-free and their sums float adds (reduce_ops.h): those vectorise.
  if constexpr (!kIsNarrowFloat<T> || kIsFloatBacked<T>) {
    switch (hostSimdLevel()) {
      case SimdLevel::kAvx512:
        return reduceCopyLoopAvx512<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, src0, src1, dst0, dst1);
      case SimdLevel::kAvx2:
        return reduceCopyLoopAvx2<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, src0, src1, dst0, dst1);
      case SimdLevel::kPortable:
        break;
    }
  }
#endif
  reduceCopyLoop<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, step, src0, src1, dst0, dst1);
}

// The loop for one choice of flags: kPacked, the device's (reduceCopyPacked: begin is the thread's
// index, end the element count, step the thread count); otherwise the host's contiguous chunk.
template <bool kPacked, bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyLoopOf(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0,
                                            const T* src1, T* dst0, T* dst1) {
  if constexpr (kPacked) {
    reduceCopyPacked<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, step, end, src0, src1, dst0, dst1);
  } else {
    reduceCopyLoopAtLevel<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, begin, end, step, src0, src1, dst0, dst1);
  }
}

template <bool kPacked, bool kPre0, bool kPre1, bool kPost, class Fn, class T>
CC_HD void reduceCopyPointers(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0, const T* src1,
                              T* dst0, T* dst1) {
  if (src1 != nullptr) {
    if (dst1 != nullptr) {
      reduceCopyLoopOf<kPacked, true, kPre0, kPre1, kPost, true>(fn, begin, end, step, src0, src1, dst0, dst1);
    } else {
      reduceCopyLoopOf<kPacked, true, kPre0, kPre1, kPost, false>(fn, begin, end, step, src0, src1, dst0, dst1);
    }
  } else if (dst1 != nullptr) {
    reduceCopyLoopOf<kPacked, false, kPre0, false, kPost, true>(fn, begin, end, step, src0, src1, dst0, dst1);
  } else {
    reduceCopyLoopOf<kPacked, false, kPre0, false, kPost, false>(fn, begin, end, step, src0, src1, dst0, dst1);
  }
}

// One instantiation per choice of the (normalised) flags; those a functor lacks are compile-time
// false, so their cases collapse onto one.
template <bool kPacked, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyFlags(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0,
                                           bool preOp0, const T* src1, bool preOp1, T* dst0, T* dst1, bool postOp) {
  constexpr bool kPre = Fn::kHasPreOp;
  constexpr bool kPost = Fn::kHasPostOp;
  // clang-format off
  switch ((preOp0 ? 1 : 0) | (preOp1 ? 2 : 0) | (postOp ? 4 : 0)) {
    case 0: return reduceCopyPointers<kPacked, false, false, false>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 1: return reduceCopyPointers<kPacked, kPre, false, false>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 2: return reduceCopyPointers<kPacked, false, kPre, false>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 3: return reduceCopyPointers<kPacked, kPre, kPre, false>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 4: return reduceCopyPointers<kPacked, false, false, kPost>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 5: return reduceCopyPointers<kPacked, kPre, false, kPost>(fn, begin, end, step, src0, src1, dst0, dst1);
    case 6: return reduceCopyPointers<kPacked, false, kPre, kPost>(fn, begin, end, step, src0, src1, dst0, dst1);
    default: return reduceCopyPointers<kPacked, kPre, kPre, kPost>(fn, begin, end, step, src0, src1, dst0, dst1);
  }
  // clang-format on
}

// reduceCopy as the device runs it (below), callable on the host so that tests run the device's
// thread-to-element map: thread tid takes elements and 16-byte packs strided by nthreads
// (reduceCopyPacked). Same contract as reduceCopy, except that buffers must be element-aligned.
template <class Fn, class T>
CC_HD void reduceCopyDevice(const Fn& fn, int tid, int nthreads, size_t n, const T* src0, bool preOp0,
                            const std::type_identity_t<T>* src1, bool preOp1, std::type_identity_t<T>* dst0,
                            std::type_identity_t<T>* dst1, bool postOp) {
  preOp0 = preOp0 && Fn::kHasPreOp;
  preOp1 = preOp1 && Fn::kHasPreOp && src1 != nullptr;
  postOp = postOp && Fn::kHasPostOp;
  reduceCopyFlags<true>(fn, static_cast<size_t>(tid), n, static_cast<size_t>(nthreads), src0, preOp0, src1, preOp1,
                        dst0, dst1, postOp);
}

// dst0[i] (and dst1[i]) = postOp?(reduce(preOp0?(src0[i]), preOp1?(src1[i]))) for i in [0, n),
// with the src1 term left out when src1 is null and dst1 skipped when null. Flags name functor
// hooks to apply; they are ignored when the functor has no such hook.
//
// Threads: the nthreads callers (tid 0..nthreads-1, same arguments) together write every element
// once; which thread gets which element is unspecified: 16-byte packs strided by tid on the
// device where the pointers allow (coalesced vector moves, reduceCopyPacked), contiguous
// per-thread chunks on the host (cache lines not shared, loop vectorisable). Callers
// synchronise the threads before reading the result.
// Aliasing: a destination may be the same pointer as a source (in place); no other overlap.
// Alignment: element-aligned on the device; any byte address on the host.
// Cost: one pass over the data; a pure copy (no src1, no hook applied) is a memcpy on the host.
// T is deduced from src0 alone, so src1/dst1 may be passed as nullptr.
template <class Fn, class T>
CC_HD void reduceCopy(const Fn& fn, int tid, int nthreads, size_t n, const T* src0, bool preOp0,
                      const std::type_identity_t<T>* src1, bool preOp1, std::type_identity_t<T>* dst0,
                      std::type_identity_t<T>* dst1, bool postOp) {
#if CC_DEVICE_COMPILE
  reduceCopyDevice(fn, tid, nthreads, n, src0, preOp0, src1, preOp1, dst0, dst1, postOp);
#else
  preOp0 = preOp0 && Fn::kHasPreOp;
  preOp1 = preOp1 && Fn::kHasPreOp && src1 != nullptr;
  postOp = postOp && Fn::kHasPostOp;

  // Chunks rounded up to 64 bytes' worth of elements so that threads seldom share a cache line.
  constexpr size_t kGrain = sizeof(T) >= 64 ? 1 : 64 / sizeof(T);
  const size_t perThread = (n + nthreads - 1) / nthreads;
  const size_t chunk = (perThread + kGrain - 1) / kGrain * kGrain;
  const size_t begin = chunk * tid < n ? chunk * tid : n;
  const size_t end = n - begin < chunk ? n : begin + chunk;
  if (begin == end) return;

  if (src1 == nullptr && !preOp0 && !postOp) {
    const char* from = reinterpret_cast<const char*>(src0) + begin * sizeof(T);
    const size_t bytes = (end - begin) * sizeof(T);
    if (dst0 != src0) __builtin_memcpy(reinterpret_cast<char*>(dst0) + begin * sizeof(T), from, bytes);
    if (dst1 != nullptr && dst1 != src0) {
      __builtin_memcpy(reinterpret_cast<char*>(dst1) + begin * sizeof(T), from, bytes);
    }
    return;
  }
  reduceCopyFlags<false>(fn, begin, end, 1, src0, preOp0, src1, preOp1, dst0, dst1, postOp);
#endif
}

}  // namespace collcomm::detail
