// Host Broadcast and AllGather: data moves but is not combined, so one byte-wise instantiation
// serves every data type.
#include "collectives/ring_all_gather.h"
#include "collectives/ring_broadcast.h"
#include "device/host/host_ring_runner.h"

namespace collcomm::detail {
namespace {

struct BroadcastAlgo {
  template <class T, class Prims>
  static void run(Prims& prims, const RingWork& w) {
    ringBroadcast<T>(prims, w);
  }
};
struct AllGatherAlgo {
  template <class T, class Prims>
  static void run(Prims& prims, const RingWork& w) {
    ringAllGather<T>(prims, w);
  }
};

template <class Algo>
Status runBytes(const HostCollArgs& a, const HostWaitContext& ctx) {
  HostCollArgs bytes = a;
  lowerToBytes(&bytes);
  if (a.nranks == 1) {
    if (bytes.count != 0 && a.sendbuff != a.recvbuff) memcpy(a.recvbuff, a.sendbuff, bytes.count);
    return kOk;
  }
  return runRingProto<uint8_t, FuncSum<uint8_t>, Algo>(bytes, ctx);
}

}  // namespace

Status hostRunCopyCollective(const HostCollArgs& args, const HostWaitContext& ctx) {
  if (args.kind == CollKind::kBroadcast) return runBytes<BroadcastAlgo>(args, ctx);
  return runBytes<AllGatherAlgo>(args, ctx);
}

}  // namespace collcomm::detail
