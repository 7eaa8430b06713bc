// Non-temporal ("streaming") stores for results written to the user's buffers in large host
// operations (data path, host executor only).
//
// A plain store to a line not in cache first reads the line (read-for-ownership), so an
// out-of-place result costs a read and a write of memory per byte; a streaming store writes the
// line without reading it and without pushing the working set out of cache. Worth it only when
// the result will not be read again soon: the planner turns it on above a size (see plan/tuner.h).
//
// The same holds for FIFO steps that another core reads (plan: streamSteps): a step written with
// plain stores sits dirty in the writer's cache, and every line then crosses to the reader's core
// cache to cache. Where the two cores are far apart (a VM whose vCPUs land on different dies)
// that transfer is several times slower than memory; streamed, the step goes through memory.
//
// reduceCopyStreaming computes in small blocks that stay in L1 (or in the destination that is not
// streamed, if one is), then streams each block to the streamed destination(s). It ends with a
// store fence: streaming stores are weakly ordered, and whatever the caller publishes next (a FIFO
// flag, the operation's completion) must not overtake them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "device/reduce_copy.h"

namespace collcomm::detail {

// dst = src for `bytes` bytes, the dst side with streaming stores where it is 16-byte aligned.
inline void streamCopy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head >= bytes) {
    memcpy(d, s, bytes);
    return;
  }
  memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  memcpy(d + i, s + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

inline void streamFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// reduceCopy (reduce_copy.h, one host thread) with dst0 (stream0) and/or dst1 (stream1, when
// dst1 is not null) written by streaming stores; at least one of them is.
template <class Fn, class T>
void reduceCopyStreaming(const Fn& fn, size_t n, const T* src0, bool preOp0, const std::type_identity_t<T>* src1,
                         bool preOp1, std::type_identity_t<T>* dst0, bool stream0, std::type_identity_t<T>* dst1,
                         bool stream1, bool postOp) {
  constexpr size_t kBlockBytes = 4096;
  constexpr size_t kBlock = sizeof(T) >= kBlockBytes ? 1 : kBlockBytes / sizeof(T);
  alignas(64) unsigned char scratch[kBlock * sizeof(T)];
  stream1 = stream1 && dst1 != nullptr;
  // The destination written with plain stores, if any: blocks are computed there.
  T* cached = !stream0 ? dst0 : (dst1 != nullptr && !stream1 ? dst1 : nullptr);
  const bool pure = src1 == nullptr && !(preOp0 && Fn::kHasPreOp) && !(postOp && Fn::kHasPostOp);
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = n - i < kBlock ? n - i : kBlock;
    const T* from = src0 + i;
    if (!pure || cached != nullptr) {
      T* block = cached != nullptr ? cached + i : reinterpret_cast<T*>(scratch);
      reduceCopy(fn, 0, 1, len, src0 + i, preOp0, src1 != nullptr ? src1 + i : nullptr, preOp1, block,
                 static_cast<T*>(nullptr), postOp);
      from = block;
    }
    if (stream0 && dst0 + i != from) streamCopy(dst0 + i, from, len * sizeof(T));
    if (stream1 && dst1 + i != from) streamCopy(dst1 + i, from, len * sizeof(T));
  }
  streamFence();
}

}  // namespace collcomm::detail
