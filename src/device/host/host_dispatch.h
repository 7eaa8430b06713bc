// The host executor's dispatch from a run-time (data type, reduction) to the instantiation of a
// portable algorithm for that pair: one switch for every algorithm (the ring runner's Run,
// host_ring_runner.h, picks the protocol inside), so each is instantiated from the lists alone for
// every CC_DTYPE_LIST x CC_REDOP_LIST pair an operation can reach (redOpKindReachable).
#pragma once

#include "collcomm.h"
#include "common/status.h"
#include "device/dtypes.h"
#include "device/op_arg.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

// Run: a type with `template <class T, class Fn> static Status run(Args...)`.
template <class Run, ccDataType_t D, class... Args>
Status dispatchReductionOf(RedOpKind op, Args&&... args) {
  using T = typename DtypeTraits<D>::Type;
  switch (op) {
#define CC_RUN_REDOP(name)                                                                                        \
  case RedOpKind::k##name:                                                                                        \
    if constexpr (redOpKindReachable(D, RedOpKind::k##name))                                                      \
      return Run::template run<T, typename RedOpFunc<RedOpKind::k##name, T>::Type>(static_cast<Args&&>(args)...); \
    break;
    CC_REDOP_LIST(CC_RUN_REDOP)
#undef CC_RUN_REDOP
  }
  return CC_ERROR(Status::kInternalError, "no %s reduction on data type %d: makeOpArg never asks for it",
                  redOpKindName(op), static_cast<int>(D));
}

template <class Run, class... Args>
Status dispatchReduction(ccDataType_t dtype, RedOpKind op, Args&&... args) {
  switch (dtype) {
#define CC_RUN_DTYPE(enumValue, Type, name) \
  case enumValue:                           \
    return dispatchReductionOf<Run, enumValue>(op, static_cast<Args&&>(args)...);
    CC_DTYPE_LIST(CC_RUN_DTYPE)
#undef CC_RUN_DTYPE
    default:
      break;
  }
  return CC_ERROR(Status::kInternalError, "unknown data type %d", static_cast<int>(dtype));
}

}  // namespace collcomm::detail
