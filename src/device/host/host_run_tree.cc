// Host instantiations of the tree AllReduce (collectives/tree_all_reduce.h) for every data type,
// reduction and protocol: per channel, the four role Primitives over the channel's tree links.
#include "collectives/tree_all_reduce.h"
#include "device/host/host_ring_runner.h"

namespace collcomm::detail {
namespace {

struct TreeAllReduceAlgo {
  template <class T, class Fn, class Proto>
  static Status runAll(const HostCollArgs& a, const HostWaitContext& ctx) {
    using Prims = Primitives<T, Fn, Proto, HostPlatform>;
    Fn fn(a.op.opArg);
    if (a.nranks == 1) {  // alone: the input, pre- and post-processed (as the ring runner does)
      reduceCopy(fn, 0, 1, a.count, static_cast<const T*>(a.sendbuff), true, static_cast<const T*>(nullptr), false,
                 static_cast<T*>(a.recvbuff), static_cast<T*>(nullptr), true);
      return kOk;
    }
    HostPlatform plat(ctx);
    // A peer that left before this operation fails it at once, naming the peer.
    for (int c = 0; c < a.nChannels; ++c) {
      const TreeLinks& l = a.trees[c];
      if (l.fromParent != nullptr && !plat.peerPresent(l.fromParent->peer, "data")) return plat.status();
      for (int k = 0; k < 2; ++k)
        if (l.fromChild[k] != nullptr && !plat.peerPresent(l.fromChild[k]->peer, "data")) return plat.status();
    }
    for (int c = 0; c < a.nChannels; ++c) {
      const TreeLinks& l = a.trees[c];
      SendConn* send[kTreeRoles];
      RecvConn* recv[kTreeRoles];
      for (int r = 0; r < kTreeRoles; ++r) treeRoleConns(l, r, &send[r], &recv[r]);
      const uint32_t tag = callTagOf(a);
      Prims roles[kTreeRoles] = {Prims(plat, fn, send[0], recv[0], tag), Prims(plat, fn, send[1], recv[1], tag),
                                 Prims(plat, fn, send[2], recv[2], tag), Prims(plat, fn, send[3], recv[3], tag)};
      // Every tree connection carries steps of one size (core/tree_conns.h): any role that has a
      // connection says it.
      size_t stepElems = 0;
      for (int r = 0; r < kTreeRoles && stepElems == 0; ++r)
        if (send[r] != nullptr || recv[r] != nullptr) stepElems = roles[r].stepElems();
      treeAllReduce<T>(roles, treeWorkOf(a, c, l, stepElems));
      if (!isOk(plat.status())) break;
    }
    return plat.status();
  }
};

}  // namespace

Status hostRunTreeAllReduce(const HostCollArgs& args, const HostWaitContext& ctx) {
  if (args.trees == nullptr)
    return CC_ERROR(Status::kInternalError, "tree AllReduce without the channels' tree connections");
  return runReducingRing<TreeAllReduceAlgo>(args, ctx);
}

}  // namespace collcomm::detail
