// Streaming stores (device/host/stream_store.h): every byte lands, at any alignment and length,
// and reduceCopyStreaming gives the bits reduceCopy gives, with and without a FIFO destination,
// whichever destinations are streamed.
#include "device/host/stream_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "device/op_arg.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {
namespace {

TEST(StreamCopy, EveryAlignmentAndLength) {
  std::vector<unsigned char> src(9000), dst(9100);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t dOff : {0, 1, 5, 15, 16, 17}) {
    for (size_t sOff : {0, 3, 8}) {
      for (size_t len : {0, 1, 15, 16, 17, 63, 64, 65, 100, 4096, 8191}) {
        std::fill(dst.begin(), dst.end(), 0xEE);
        streamCopy(dst.data() + dOff, src.data() + sOff, len);
        streamFence();
        ASSERT_EQ(memcmp(dst.data() + dOff, src.data() + sOff, len), 0) << dOff << " " << sOff << " " << len;
        for (size_t i = 0; i < dOff; ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote before the destination";
        for (size_t i = dOff + len; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xEE) << "wrote past the destination";
      }
    }
  }
}

// Compares reduceCopyStreaming with reduceCopy for a functor, over misaligned buffers and lengths
// that cross the internal block size.
template <class Fn>
void expectSameAsReduceCopy(const Fn& fn, bool withSrc1, bool withDst1, bool pre, bool post, bool stream0,
                            bool stream1) {
  for (size_t n : {size_t{1}, size_t{5}, size_t{1023}, size_t{1024}, size_t{1025}, size_t{5000}}) {
    std::vector<unsigned char> a(n * 4 + 8), b(n * 4 + 8), ref(n * 4 + 8), got(n * 4 + 8), fifoRef(n * 4 + 8),
        fifoGot(n * 4 + 8);
    float* src0 = reinterpret_cast<float*>(a.data() + 4);
    float* src1 = reinterpret_cast<float*>(b.data() + 4);
    for (size_t i = 0; i < n; ++i) {
      const float x = static_cast<float>(i % 97) - 40.0f, y = static_cast<float>((i * 13) % 31);
      memcpy(a.data() + 4 + i * 4, &x, 4);
      memcpy(b.data() + 4 + i * 4, &y, 4);
    }
    // Destinations one byte off 16-byte alignment, as a user's buffer may be.
    float* r = reinterpret_cast<float*>(ref.data() + 1);
    float* g = reinterpret_cast<float*>(got.data() + 1);
    float* fr = withDst1 ? reinterpret_cast<float*>(fifoRef.data()) : nullptr;
    float* fg = withDst1 ? reinterpret_cast<float*>(fifoGot.data()) : nullptr;
    reduceCopy(fn, 0, 1, n, src0, pre, withSrc1 ? src1 : nullptr, pre, r, fr, post);
    reduceCopyStreaming(fn, n, src0, pre, withSrc1 ? src1 : nullptr, pre, g, stream0, fg, stream1, post);
    ASSERT_EQ(memcmp(ref.data(), got.data(), ref.size()), 0) << "n=" << n << " stream0=" << stream0;
    if (withDst1) {
      ASSERT_EQ(memcmp(fifoRef.data(), fifoGot.data(), fifoRef.size()), 0) << "n=" << n << " stream1=" << stream1;
    }
  }
}

// Every combination of streamed destinations: the user's buffer (dst0), the FIFO slot (dst1), or
// both, with the other (if any) computed in place.
TEST(ReduceCopyStreaming, MatchesReduceCopy) {
  for (bool src1 : {false, true})
    for (bool dst1 : {false, true})
      for (int streams = 1; streams < 4; ++streams) {
        const bool stream0 = (streams & 1) != 0, stream1 = (streams & 2) != 0;
        if (!dst1 && !stream0) continue;  // nothing would be streamed
        expectSameAsReduceCopy(FuncSum<float>(0), src1, dst1, false, false, stream0, stream1);
        expectSameAsReduceCopy(FuncPreMulSum<float>(scalarOpArg(0.5f)), src1, dst1, true, false, stream0, stream1);
        expectSameAsReduceCopy(FuncSumPostDiv<float>(3), src1, dst1, false, true, stream0, stream1);
      }
}

TEST(ReduceCopyStreaming, InPlace) {
  const size_t n = 3001;
  std::vector<float> x(n), y(n), ref(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 50);
    y[i] = static_cast<float>(i % 7);
    ref[i] = x[i] + y[i];
  }
  reduceCopyStreaming(FuncSum<float>(0), n, y.data(), false, x.data(), false, x.data(), true,
                      static_cast<float*>(nullptr), false, false);
  EXPECT_EQ(memcmp(x.data(), ref.data(), n * sizeof(float)), 0);
}

}  // namespace
}  // namespace collcomm::detail
