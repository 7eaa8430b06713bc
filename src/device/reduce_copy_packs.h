// The element moves of reduceCopy (reduce_copy.h) and the device's element loop over 16-byte
// packs: one vector load or store moves 16 / sizeof(T) elements, and each thread keeps several
// packs in flight, where one scalar per thread per iteration left a channel at a few GB/s.
//
// Device code (data path). Everything here is CC_HD, the pack loop included, so that the unit
// tests run the device's thread-to-element map and pack arithmetic on the host
// (tests/unit/device/reduce_copy_test.cc); only loadPack/storePack differ (uint4 on the device).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "device/dtypes.h"

namespace collcomm::detail {

// Host buffers may be misaligned, even within an element (the user's pointer plus any byte
// offset), so host code moves elements with memcpy; gcc turns it into plain (vector) moves.
// Device buffers are element-aligned.
template <class T>
CC_HD CC_FORCE_INLINE T loadElem(const T* p, size_t i) {
#if CC_DEVICE_COMPILE
  return p[i];
#else
  T v;
  __builtin_memcpy(&v, reinterpret_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
#endif
}

template <class T>
CC_HD CC_FORCE_INLINE void storeElem(T* p, size_t i, T v) {
#if CC_DEVICE_COMPILE
  p[i] = v;
#else
  __builtin_memcpy(reinterpret_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
#endif
}

// One element through the functor, in the order reduceCopyLoop (reduce_copy.h) applies it:
// preOp on each source that asks for it, reduce (when there is a second source), postOp. w is
// ignored without kSrc1.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, class Fn, class T>
CC_HD CC_FORCE_INLINE T reduceCopyElem(const Fn& fn, T v, T w) {
  if constexpr (kPre0) v = fn.preOp(v);
  if constexpr (kSrc1) {
    if constexpr (kPre1) w = fn.preOp(w);
    v = fn.reduce(v, w);
  }
  if constexpr (kPost) v = fn.postOp(v);
  return v;
}

// The unit of the device's vector loads and stores.
inline constexpr size_t kPackBytes = 16;

template <class T>
struct alignas(kPackBytes) Pack {
  static constexpr int kElems = static_cast<int>(kPackBytes / sizeof(T));
  T elems[kElems];
};

// Pack i of a 16-byte aligned range (any alignment on the host, where only tests call these).
template <class T>
CC_HD CC_FORCE_INLINE Pack<T> loadPack(const T* p, size_t i) {
#if CC_DEVICE_COMPILE
  const uint4 bits = reinterpret_cast<const uint4*>(p)[i];  // into a register first: one vector load
  return bitCast<Pack<T>>(bits);
#else
  Pack<T> v;
  __builtin_memcpy(&v, reinterpret_cast<const char*>(p) + i * kPackBytes, kPackBytes);
  return v;
#endif
}

template <class T>
CC_HD CC_FORCE_INLINE void storePack(T* p, size_t i, const Pack<T>& v) {
#if CC_DEVICE_COMPILE
  reinterpret_cast<uint4*>(p)[i] = bitCast<uint4>(v);
#else
  __builtin_memcpy(reinterpret_cast<char*>(p) + i * kPackBytes, &v, kPackBytes);
#endif
}

// reduceCopyElem on each element of a pack: the same operations on the same values, so the same
// bits as the scalar loop. b is ignored without kSrc1.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, class Fn, class T>
CC_HD CC_FORCE_INLINE Pack<T> applyPack(const Fn& fn, Pack<T> a, const Pack<T>& b) {
#if CC_DEVICE_COMPILE
#pragma unroll
#endif
  for (int j = 0; j < Pack<T>::kElems; ++j) {
    a.elems[j] = reduceCopyElem<kSrc1, kPre0, kPre1, kPost>(fn, a.elems[j], b.elems[j]);
  }
  return a;
}

// Element i through the functor, from the sources to the destinations.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyElemAt(const Fn& fn, size_t i, const T* src0, const T* src1, T* dst0, T* dst1) {
  const T v = loadElem(src0, i);
  const T r = reduceCopyElem<kSrc1, kPre0, kPre1, kPost>(fn, v, kSrc1 ? loadElem(src1, i) : v);
  storeElem(dst0, i, r);
  if constexpr (kDst1) storeElem(dst1, i, r);
}

// Packs in flight per thread: every load of a round is issued before the first store, so a
// thread waits for memory once per kUnroll packs. A pure copy keeps four; arithmetic keeps up to
// 16 elements' worth (four packs of float, two of half, one of 8-bit types), and one pack where an
// element's operations are long (fp8 converts through double; postOp divides): each element is a
// copy of the functor's code in the kernel, and more costs compile time, code size and registers
// (spills) where the arithmetic, not the memory, bounds the speed.
template <class T, bool kArith, bool kLong>
inline constexpr int kPackUnroll = !kArith                ? 4
                                   : kLong                ? 1
                                   : Pack<T>::kElems <= 4 ? 4
                                                          : 16 / Pack<T>::kElems;

// Packs [begin, end) of 16-byte aligned pointers, stride step: kUnroll at a time, then one at a
// time for a thread's last few. A pure copy (no src1, no hook) moves the packs untouched.
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD CC_FORCE_INLINE void reduceCopyPacks(const Fn& fn, size_t begin, size_t end, size_t step, const T* src0,
                                           const T* src1, T* dst0, T* dst1) {
  constexpr bool kArith = kSrc1 || kPre0 || kPost;
  constexpr bool kLong = kPost || (kIsNarrowFloat<T> && !kIsFloatBacked<T>);
  constexpr int kUnroll = kPackUnroll<T, kArith, kLong>;
  size_t p = begin;
  for (; p + (kUnroll - 1) * step < end; p += kUnroll * step) {
    Pack<T> a[kUnroll];
    Pack<T> b[kSrc1 ? kUnroll : 1];
#if CC_DEVICE_COMPILE
#pragma unroll
#endif
    for (int u = 0; u < kUnroll; ++u) a[u] = loadPack(src0, p + u * step);
    if constexpr (kSrc1) {
#if CC_DEVICE_COMPILE
#pragma unroll
#endif
      for (int u = 0; u < kUnroll; ++u) b[u] = loadPack(src1, p + u * step);
    }
#if CC_DEVICE_COMPILE
#pragma unroll
#endif
    for (int u = 0; u < kUnroll; ++u) {
      if constexpr (kSrc1) {
        a[u] = applyPack<kSrc1, kPre0, kPre1, kPost>(fn, a[u], b[u]);
      } else if constexpr (kArith) {
        a[u] = applyPack<kSrc1, kPre0, kPre1, kPost>(fn, a[u], a[u]);
      }
      storePack(dst0, p + u * step, a[u]);
      if constexpr (kDst1) storePack(dst1, p + u * step, a[u]);
    }
  }
  // A thread's last packs, fewer than kUnroll (none to do with kUnroll 1).
  for (; kUnroll > 1 && p < end; p += step) {
    Pack<T> a = loadPack(src0, p);
    if constexpr (kSrc1) {
      a = applyPack<kSrc1, kPre0, kPre1, kPost>(fn, a, loadPack(src1, p));
    } else if constexpr (kArith) {
      a = applyPack<kSrc1, kPre0, kPre1, kPost>(fn, a, a);
    }
    storePack(dst0, p, a);
    if constexpr (kDst1) storePack(dst1, p, a);
  }
}

// The device's reduceCopy loop for one thread (tid of nthreads) over elements [0, n). When every
// pointer has the same offset within 16 bytes (whole elements), the whole packs between the first
// and the last 16-byte boundary go strided by tid, and the elements before (the head) and after
// (the tail) one per thread; otherwise every element goes one per thread. Each element is written
// by exactly one thread, which reads it (src0[i], src1[i]) just before, so a destination may be a
// source (in place).
template <bool kSrc1, bool kPre0, bool kPre1, bool kPost, bool kDst1, class Fn, class T>
CC_HD void reduceCopyPacked(const Fn& fn, size_t tid, size_t nthreads, size_t n, const T* src0, const T* src1, T* dst0,
                            T* dst1) {
  constexpr size_t kElems = Pack<T>::kElems;
  // Packs only where no hook applies: the hooks (PreMulSum's preOp, SumPostDiv's postOp) multiply
  // the flag choices by eight, and their pack loops made the kernel table compile 2.6 times as
  // long (CI's minutes); those calls go element by element, as before packs.
  constexpr bool kPacks = !kPre0 && !kPre1 && !kPost;
  const uintptr_t offset = reinterpret_cast<uintptr_t>(src0) % kPackBytes;
  bool packable = kPacks && offset % sizeof(T) == 0 && reinterpret_cast<uintptr_t>(dst0) % kPackBytes == offset;
  if constexpr (kSrc1) packable = packable && reinterpret_cast<uintptr_t>(src1) % kPackBytes == offset;
  if constexpr (kDst1) packable = packable && reinterpret_cast<uintptr_t>(dst1) % kPackBytes == offset;
  const size_t toBoundary = (kPackBytes - offset) % kPackBytes / sizeof(T);
  const size_t head = !packable ? n : toBoundary < n ? toBoundary : n;
  const size_t packs = (n - head) / kElems;
  const size_t tail = head + packs * kElems;
  if constexpr (kPacks) {
    if (packs != 0) {
      reduceCopyPacks<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, tid, packs, nthreads, src0 + head,
                                                         kSrc1 ? src1 + head : nullptr, dst0 + head,
                                                         kDst1 ? dst1 + head : nullptr);
    }
  }
  // Head and tail as one range (the tail numbered after the head), so that one loop serves both.
  const size_t scalars = head + (n - tail);
  for (size_t k = tid; k < scalars; k += nthreads) {
    reduceCopyElemAt<kSrc1, kPre0, kPre1, kPost, kDst1>(fn, k < head ? k : tail + (k - head), src0, src1, dst0, dst1);
  }
}

}  // namespace collcomm::detail
