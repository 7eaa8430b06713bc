// The (data type, reduction) pairs a CUDA kernel template is instantiated for, in one place for
// every kernel family (the ring kernels' table, kernel_shard.cu; the one-shot and Direct kernels):
// a walk over CC_DTYPE_LIST x CC_REDOP_LIST that visits only the pairs a selection admits, and the
// launch-time lookup of a kernel built on it. A pair the selection leaves out is never
// instantiated: nvcc's time per kernel is most of CI's CUDA stage.
// Plain C++: no CUDA header (the kernels' files pass their kernels in).
#pragma once

#include "collcomm.h"
#include "device/dtypes.h"
#include "device/op_arg.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

// Selections: a type with `static constexpr bool has(ccDataType_t, RedOpKind)`. The pairs an
// operation can ask for (redOpKindReachable): every kernel family's.
struct ReachableTypeOp {
  static constexpr bool has(ccDataType_t dtype, RedOpKind op) { return redOpKindReachable(dtype, op); }
};

template <class Pairs, ccDataType_t D, class Visit>
constexpr void forEachOpOf(Visit& visit) {
#define CC_VISIT_REDOP(name) \
  if constexpr (Pairs::has(D, RedOpKind::k##name)) visit.template operator()<D, RedOpKind::k##name>();
  CC_REDOP_LIST(CC_VISIT_REDOP)
#undef CC_VISIT_REDOP
}

// Calls visit.template operator()<D, O>() for every pair (D, O) of CC_DTYPE_LIST x CC_REDOP_LIST
// that Pairs has, in the lists' order.
template <class Pairs, class Visit>
constexpr void forEachTypeOp(Visit&& visit) {
#define CC_VISIT_DTYPE(e, T, name) forEachOpOf<Pairs, e>(visit);
  CC_DTYPE_LIST(CC_VISIT_DTYPE)
#undef CC_VISIT_DTYPE
}

// How many pairs Pairs has: the kernels per template it instantiates (a build-time guard on nvcc's time).
template <class Pairs>
constexpr int typeOpCount() {
  int n = 0;
  forEachTypeOp<Pairs>([&]<ccDataType_t, RedOpKind>() { ++n; });
  return n;
}

// Appends the host handle of Kernel<T, Fn> for every pair Pairs has (to load them ahead).
template <template <class, class> class Kernel, class Pairs, class Out>
void appendKernels(Out* out) {
  forEachTypeOp<Pairs>([&]<ccDataType_t D, RedOpKind O>() {
    using T = typename DtypeTraits<D>::Type;
    out->push_back(Kernel<T, typename RedOpFunc<O, T>::Type>::get());
  });
}

// The host handle (for cudaLaunchKernel) of Kernel<T, Fn> for (dtype, op), with T dtype's element
// type and Fn op's functor on it; null for a pair Pairs leaves out and for values outside the
// lists. Kernel: `template <class T, class Fn> struct` with `static const void* get()`, which
// names the kernel (taking its address instantiates it).
template <template <class, class> class Kernel, class Pairs>
const void* kernelForTypeOp(ccDataType_t dtype, RedOpKind op) {
  const void* found = nullptr;
  forEachTypeOp<Pairs>([&]<ccDataType_t D, RedOpKind O>() {
    using T = typename DtypeTraits<D>::Type;
    if (D == dtype && O == op) found = Kernel<T, typename RedOpFunc<O, T>::Type>::get();
  });
  return found;
}

}  // namespace collcomm::detail
