// How a public reduction (ccRedOp_t on a ccDataType_t) becomes a data-path functor kind and its
// 64-bit argument. Host side, control tier: called once per operation when it is enqueued.
#pragma once

#include <cstdint>

#include "collcomm.h"
#include "device/dtypes.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

struct RedOpSpec {
  RedOpKind kind;
  uint64_t opArg;  // passed to the functor's constructor
  // Non-null: the functor's scalar lies here, in device memory, and opArg is unused: a GPU
  // communicator's PreMulSum with ccScalarDevice, read when the kernel runs (opArgOf), so that an
  // earlier kernel of the stream may write it.
  const void* scalarAddress = nullptr;
};

// What a functor on elements of T is made with: opArg, or the bits of the scalar at scalarAddress.
template <class T>
CC_HD inline uint64_t opArgOf(const RedOpSpec& op) {
  if (op.scalarAddress == nullptr) return op.opArg;
  return static_cast<uint64_t>(*static_cast<const UintOfSize<sizeof(T)>*>(op.scalarAddress));
}

// The bits of one T, zero-extended: FuncPreMulSum's opArg encoding.
template <class T>
inline uint64_t scalarOpArg(T scalar) {
  return static_cast<uint64_t>(bitCast<UintOfSize<sizeof(T)>>(scalar));
}

// A built-in op (op < ccNumOps) on a valid type, for a communicator of nranks >= 1 ranks:
//   ccSum/ccProd/ccMax/ccMin -> the functor of that name, opArg 0;
//   ccAvg on floating types  -> PreMulSum with scalar 1/nranks rounded to T (as NCCL does; on
//                               f8e4m3 it rounds to 0 above 1024 ranks, on f8e5m2 above 2^17);
//   ccAvg on integer types   -> SumPostDiv by nranks (truncating).
// Ops made by ccRedOpCreatePreMulSum are not built-in: see makePreMulSumOpArg.
inline RedOpSpec makeOpArg(ccRedOp_t op, ccDataType_t type, int nranks) {
  switch (op) {
    case ccSum:
      return {RedOpKind::kSum, 0};
    case ccProd:
      return {RedOpKind::kProd, 0};
    case ccMax:
      return {RedOpKind::kMax, 0};
    case ccMin:
      return {RedOpKind::kMin, 0};
    default:
      break;
  }
  // ccAvg
  if (!dtypeIsFloating(type)) return {RedOpKind::kSumPostDiv, static_cast<uint64_t>(nranks)};
  const double inverse = 1.0 / static_cast<double>(nranks);
  switch (type) {
#define CC_AVG_SCALAR(e, T, name) \
  case e:                         \
    return {RedOpKind::kPreMulSum, scalarOpArg(fromDouble<T>(inverse))};
    CC_DTYPE_LIST(CC_AVG_SCALAR)
#undef CC_AVG_SCALAR
    default:
      return {RedOpKind::kPreMulSum, 0};
  }
}

// Whether an operation can ask for reduction kind `kind` on `type`: makeOpArg gives SumPostDiv only
// to ccAvg on integers (floats average by PreMulSum); every other kind reaches every type. The
// kernel tables and the host executor's dispatch instantiate only these pairs: a kernel nothing can
// launch would still cost its compile time, CI's largest.
CC_HD constexpr bool redOpKindReachable(ccDataType_t type, RedOpKind kind) {
  return kind != RedOpKind::kSumPostDiv || !dtypeIsFloating(type);
}

// A ccRedOpCreatePreMulSum op whose scalar is known on the host: scalar points at one element of
// type, any alignment.
inline RedOpSpec makePreMulSumOpArg(ccDataType_t type, const void* scalar) {
  switch (type) {
#define CC_PREMUL_SCALAR(e, T, name)               \
  case e: {                                        \
    UintOfSize<sizeof(T)> bits;                    \
    __builtin_memcpy(&bits, scalar, sizeof(bits)); \
    return {RedOpKind::kPreMulSum, bits};          \
  }
    CC_DTYPE_LIST(CC_PREMUL_SCALAR)
#undef CC_PREMUL_SCALAR
    default:
      return {RedOpKind::kPreMulSum, 0};
  }
}

}  // namespace collcomm::detail
