// reduceCopy over every dtype, functor shape and flag combination, on misaligned host buffers,
// split across simulated threads, at every vector level this CPU runs (device/host/simd_level.h),
// against an element-by-element reference built from the functor. Built at -O3, as the library is
// (tests/CMakeLists.txt), so that the loops under test are the vectorised ones. The device's loop
// has its own file (reduce_copy_device_test.cc).
#include "unit/device/reduce_copy_cases.h"

#include "device/op_arg.h"

namespace collcomm::detail::reduce_copy_test {
namespace {

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

template <class T>
class ReduceCopy : public ::testing::Test {};
TYPED_TEST_SUITE(ReduceCopy, ElementTypes);

TYPED_TEST(ReduceCopy, Sum) { sweep<FuncSum<TypeParam>, TypeParam>(FuncSum<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Prod) { sweep<FuncProd<TypeParam>, TypeParam>(FuncProd<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Max) { sweep<FuncMax<TypeParam>, TypeParam>(FuncMax<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, Min) { sweep<FuncMin<TypeParam>, TypeParam>(FuncMin<TypeParam>(0)); }
TYPED_TEST(ReduceCopy, PreMulSum) {
  using T = TypeParam;
  sweep<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(3))));
  if constexpr (kIsFloating<T>) sweep<FuncPreMulSum<T>, T>(FuncPreMulSum<T>(scalarOpArg(fromDouble<T>(0.1))));
}
TYPED_TEST(ReduceCopy, SumPostDiv) { sweep<FuncSumPostDiv<TypeParam>, TypeParam>(FuncSumPostDiv<TypeParam>(3)); }

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

}  // namespace
}  // namespace collcomm::detail::reduce_copy_test
