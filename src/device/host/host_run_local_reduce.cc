// Host reduction of several local buffers into one, in rank order (collectives/rank_order_reduce.h,
// the one place that decides the order), for every data type and reduction: the second half of
// Direct's reductions (host_direct.cc).
#include "collectives/rank_order_reduce.h"
#include "device/host/host_dispatch.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {
namespace {

struct LocalReduce {
  template <class T, class Fn>
  static Status run(const HostLocalReduceArgs& a) {
    const HostWaitContext noWaits;  // the reduction waits for nothing
    HostPlatform plat(noWaits);
    const Fn fn(a.op.opArg);
    reduceInRankOrder<T>(
        plat, fn, a.nSrcs, [&](int k) { return static_cast<const T*>(a.srcs[k]); }, static_cast<T*>(a.dst), a.count);
    return kOk;
  }
};

}  // namespace

Status hostReduceLocal(const HostLocalReduceArgs& args) {
  return dispatchReduction<LocalReduce>(args.dtype, args.op.kind, args);
}

}  // namespace collcomm::detail
