// Host instantiations of ring Reduce for every data type, reduction and protocol.
#include "collectives/ring_reduce.h"
#include "device/host/host_ring_runner.h"

namespace collcomm::detail {
namespace {
struct ReduceAlgo {
  template <class T, class Prims>
  static void run(Prims& prims, const RingWork& w) {
    ringReduce<T>(prims, w);
  }
};
}  // namespace

Status hostRunReduce(const HostCollArgs& args, const HostWaitContext& ctx) {
  return runReducingRing<ReduceAlgo>(args, ctx);
}

}  // namespace collcomm::detail
