// Host instantiations of AllReduce (ring and one-shot) for every data type, reduction and protocol.
#include "collectives/one_shot_all_reduce.h"
#include "device/host/host_ring_runner.h"

namespace collcomm::detail {
namespace {
struct AllReduceAlgo {
  template <class T, class Prims>
  static void run(Prims& prims, const RingWork& w) {
    allReduce<T>(prims, w);
  }
};
}  // namespace

Status hostRunAllReduce(const HostCollArgs& args, const HostWaitContext& ctx) {
  if (args.algo == Algorithm::kTree) return hostRunTreeAllReduce(args, ctx);
  return runReducingRing<AllReduceAlgo>(args, ctx);
}

}  // namespace collcomm::detail
