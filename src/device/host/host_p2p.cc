// Point-to-point batches on the host: the portable engine (collectives/p2p.h) over HostPlatform,
// the calling thread doing the work. What is host-only here is the glue: the sentence for a batch
// whose sends to self and receives from self do not pair up.
#include "collectives/p2p.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {

Status hostRunP2p(ExecTransfer* ops, size_t nOps, int selfRank, const HostWaitContext& ctx) {
  const SelfPairs self = checkSelfPairs(ops, nOps, selfRank);
  if (self.sends != self.recvs)
    return CC_ERROR(Status::kInvalidUsage, "%s on rank %d: %zu sends to self but %zu receives from self in one group",
                    ctx.opName, selfRank, self.sends, self.recvs);
  if (self.sizesDiffer)
    return CC_ERROR(Status::kInvalidUsage,
                    "%s on rank %d: a send to self of %zu bytes is paired with a receive from self of %zu bytes",
                    ctx.opName, selfRank, self.sendBytes, self.recvBytes);
  HostPlatform plat(ctx);
  P2pEngine<HostPlatform> engine(plat, ops, nOps, kP2pCallTag);
  engine.copySelf(selfRank);
  engine.run();
  return plat.status();
}

}  // namespace collcomm::detail
