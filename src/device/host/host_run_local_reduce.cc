// Host reduction of several local buffers into one, in a fixed operand order, for every data type
// and reduction: the second half of the one-shot AllReduce on more than two ranks (host_one_shot.cc
// gathers every rank's input first) and of Direct's reductions (host_direct.cc).
#include "device/dtypes.h"
#include "device/host/host_executor.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {
namespace {

template <class T, class Fn>
Status reduceLocal(const HostLocalReduceArgs& a) {
  Fn fn(a.op.opArg);
  T* dst = static_cast<T*>(a.dst);
  auto src = [&](int i) { return static_cast<const T*>(a.srcs[i]); };
  if (a.nSrcs == 1) {
    reduceCopy(fn, 0, 1, a.count, src(0), true, static_cast<const T*>(nullptr), false, dst, static_cast<T*>(nullptr),
               true);
    return kOk;
  }
  // ((x0 (+) x1) (+) x2) ... : the same order, so the same bits, on every rank.
  reduceCopy(fn, 0, 1, a.count, src(0), true, src(1), true, dst, static_cast<T*>(nullptr), a.nSrcs == 2);
  for (int i = 2; i < a.nSrcs; ++i)
    reduceCopy(fn, 0, 1, a.count, static_cast<const T*>(dst), false, src(i), true, dst, static_cast<T*>(nullptr),
               i == a.nSrcs - 1);
  return kOk;
}

template <class T>
Status reduceLocalOp(const HostLocalReduceArgs& a) {
  switch (a.op.kind) {
    case RedOpKind::kSum: return reduceLocal<T, FuncSum<T>>(a);
    case RedOpKind::kProd: return reduceLocal<T, FuncProd<T>>(a);
    case RedOpKind::kMax: return reduceLocal<T, FuncMax<T>>(a);
    case RedOpKind::kMin: return reduceLocal<T, FuncMin<T>>(a);
    case RedOpKind::kPreMulSum: return reduceLocal<T, FuncPreMulSum<T>>(a);
    case RedOpKind::kSumPostDiv: return reduceLocal<T, FuncSumPostDiv<T>>(a);
  }
  return CC_ERROR(Status::kInternalError, "unknown reduction kind %d", static_cast<int>(a.op.kind));
}

}  // namespace

Status hostReduceLocal(const HostLocalReduceArgs& args) {
  switch (args.dtype) {
#define CC_RUN_DTYPE(enumValue, Type, name) \
  case enumValue:                           \
    return reduceLocalOp<Type>(args);
    CC_DTYPE_LIST(CC_RUN_DTYPE)
#undef CC_RUN_DTYPE
    default: break;
  }
  return CC_ERROR(Status::kInternalError, "unknown data type %d", static_cast<int>(args.dtype));
}

}  // namespace collcomm::detail
