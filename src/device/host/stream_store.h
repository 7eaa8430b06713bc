// Non-temporal ("streaming") stores for results written to the user's buffers in large host
// operations (data path, host executor only).
//
// A plain store to a line not in cache first reads the line (read-for-ownership), so an
// out-of-place result costs a read and a write of memory per byte; a streaming store writes the
// line without reading it and without pushing the working set out of cache. Worth it only when
// the result will not be read again soon: the planner turns it on above a size (see plan/tuner.h).
//
// reduceCopyStreaming computes in small blocks that stay in L1 (or in dst1, the connection's FIFO
// slot, which the next rank reads at once and must stay cached), then streams each block to dst0.
// It ends with a store fence: streaming stores are weakly ordered, and whatever the caller
// publishes next (a FIFO flag, the operation's completion) must not overtake them.
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

// reduceCopy (reduce_copy.h, one host thread) with dst0 written by streaming stores.
template <class Fn, class T>
void reduceCopyStreaming(const Fn& fn, size_t n, const T* src0, bool preOp0, const std::type_identity_t<T>* src1,
                         bool preOp1, std::type_identity_t<T>* dst0, std::type_identity_t<T>* dst1, bool postOp) {
  constexpr size_t kBlockBytes = 4096;
  constexpr size_t kBlock = sizeof(T) >= kBlockBytes ? 1 : kBlockBytes / sizeof(T);
  alignas(64) unsigned char scratch[kBlock * sizeof(T)];
  for (size_t i = 0; i < n; i += kBlock) {
    const size_t len = n - i < kBlock ? n - i : kBlock;
    // Compute into dst1 (the FIFO slot) when there is one, else into L1 scratch.
    T* block = dst1 != nullptr ? dst1 + i : reinterpret_cast<T*>(scratch);
    const bool pure = src1 == nullptr && !(preOp0 && Fn::kHasPreOp) && !(postOp && Fn::kHasPostOp);
    const T* from = src0 + i;
    if (!pure || dst1 != nullptr) {
      reduceCopy(fn, 0, 1, len, src0 + i, preOp0, src1 != nullptr ? src1 + i : nullptr, preOp1, block,
                 static_cast<T*>(nullptr), postOp);
      from = block;
    }
    if (dst0 + i != from) streamCopy(dst0 + i, from, len * sizeof(T));
  }
  streamFence();
}

}  // namespace collcomm::detail
