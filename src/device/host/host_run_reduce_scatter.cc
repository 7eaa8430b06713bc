// Host instantiations of ring ReduceScatter for every data type, reduction and protocol.
#include "collectives/ring_reduce_scatter.h"
#include "device/host/host_ring_runner.h"

namespace collcomm::detail {
namespace {
struct ReduceScatterAlgo {
  template <class T, class Prims>
  static void run(Prims& prims, const RingWork& w) {
    ringReduceScatter<T>(prims, w);
  }
};
}  // namespace

Status hostRunReduceScatter(const HostCollArgs& args, const HostWaitContext& ctx) {
  return runReducingRing<ReduceScatterAlgo>(args, ctx);
}

}  // namespace collcomm::detail
