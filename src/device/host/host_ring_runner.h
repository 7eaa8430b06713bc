// Instantiates a ring algorithm for one element type, reduction functor and protocol on the host,
// and the dispatch from run-time (dtype, op, protocol) to those instantiations.
// Included only by the host_run_*.cc translation units.
#pragma once

#include <cstring>

#include "collectives/coll_work.h"
#include "device/dtypes.h"
#include "device/host/host_dispatch.h"
#include "device/host/host_executor.h"
#include "device/primitives.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

// Algo: a type with `template <class T, class Prims> static void run(Prims&, const RingWork&)` and
// `static constexpr bool kBlocks` (true: the count is per rank block, AllGather/ReduceScatter); or
// one with `template <class T, class Fn, class Proto> static Status runAll(const HostCollArgs&, const
// HostWaitContext&)` that runs every channel itself (the tree, host_run_tree.cc).
template <class T, class Fn, class Proto, class Algo>
Status runRing(const HostCollArgs& a, const HostWaitContext& ctx) {
  Fn fn(a.op.opArg);
  if (a.nranks == 1) {
    // Alone: the result is this rank's input, pre- and post-processed.
    const T* src = static_cast<const T*>(a.sendbuff);
    T* dst = static_cast<T*>(a.recvbuff);
    reduceCopy(fn, 0, 1, a.count, src, true, static_cast<const T*>(nullptr), false, dst, static_cast<T*>(nullptr),
               true);
    return kOk;
  }
  HostPlatform plat(ctx);
  for (int c = 0; c < a.nChannels; ++c) {
    const ExecChannel& ch = a.channels[c];
    if (!plat.peerPresent(ch.recv->peer, "data") || !plat.peerPresent(ch.send->peer, "buffer space"))
      return plat.status();
  }
  for (int c = 0; c < a.nChannels; ++c) {
    const ExecChannel& ch = a.channels[c];
    Primitives<T, Fn, Proto, HostPlatform> prims(plat, fn, ch.send, ch.recv, callTagOf(a));
    Algo::template run<T>(prims, channelWorkOf(a, c, ch.ringPos, ch.ringRanks, prims.stepElems()));
    if (prims.failed()) break;
  }
  return plat.status();
}

template <class T, class Fn, class Algo>
Status runRingProto(const HostCollArgs& a, const HostWaitContext& ctx) {
  if constexpr (requires { &Algo::template runAll<T, Fn, ProtoSimple>; })
    return a.proto == Protocol::kLL ? Algo::template runAll<T, Fn, ProtoLL>(a, ctx)
                                    : Algo::template runAll<T, Fn, ProtoSimple>(a, ctx);
  else
    return a.proto == Protocol::kLL ? runRing<T, Fn, ProtoLL, Algo>(a, ctx) : runRing<T, Fn, ProtoSimple, Algo>(a, ctx);
}

// Every reachable (dtype, op) instantiation of a reducing ring algorithm, each with both protocols.
template <class Algo>
struct RingRun {
  template <class T, class Fn>
  static Status run(const HostCollArgs& a, const HostWaitContext& ctx) {
    return runRingProto<T, Fn, Algo>(a, ctx);
  }
};

template <class Algo>
Status runReducingRing(const HostCollArgs& a, const HostWaitContext& ctx) {
  return dispatchReduction<RingRun<Algo>>(a.dtype, a.op.kind, a, ctx);
}

}  // namespace collcomm::detail
