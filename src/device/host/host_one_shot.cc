// The one-shot AllReduce on more than two ranks on the host: the portable algorithm
// (collectives/one_shot_all_reduce.h, oneShotAllReduceAny) over HostPlatform on the calling
// thread, for every data type and reduction. What is host-only here is the glue: the scratch the
// algorithm needs (every rank's input, and its transfers), grown on first need and kept (setup
// cost, once per size), and the sentence when there is no memory for it. (On two ranks the
// one-shot AllReduce is the ring's, host_run_all_reduce.cc.)
#include <new>

#include "collectives/one_shot_all_reduce.h"
#include "device/dtypes.h"
#include "device/host/host_dispatch.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {
namespace {

struct OneShotRun {
  template <class T, class Fn>
  static Status run(const OneShotWork& w, uint64_t opArg, const HostWaitContext& ctx) {
    HostPlatform plat(ctx);
    const Fn fn(opArg);
    oneShotAllReduceAny<T>(plat, fn, w);
    return plat.status();
  }
};

}  // namespace

Status HostExecutor::runOneShotAllReduce(const ExecColl& c, const HostWaitContext& ctx) {
  const int n = setup_.nranks, rank = setup_.rank;
  const size_t bytes = c.count * dtypeSize(c.dtype);
  try {
    if (gatherScratch_.size() < bytes * n) gatherScratch_.resize(bytes * n);
    if (peerTransfers_.size() < 2 * static_cast<size_t>(n - 1))
      peerTransfers_.resize(2 * static_cast<size_t>(n - 1));
  } catch (const std::bad_alloc&) {
    return CC_ERROR(Status::kSystemError,
                    "AllReduce on rank %d: no memory for the one-shot algorithm's %zu-byte gather buffer; unset "
                    "COLLCOMM_ALGO=OneShot for messages this large",
                    rank, bytes * n);
  }
  const OneShotWork w{c.sendbuff,
                      c.recvbuff,
                      c.count,
                      rank,
                      n,
                      c.peers,
                      gatherScratch_.data(),
                      peerTransfers_.data(),
                      c.builtinOp < 0,
                      callTagOf(collWorkOf(c, n))};
  return dispatchReduction<OneShotRun>(c.dtype, c.op.kind, w, c.op.opArg, ctx);
}

}  // namespace collcomm::detail
