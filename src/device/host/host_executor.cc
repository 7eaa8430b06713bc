// Routes a collective to its family's instantiations.
#include "device/host/host_executor.h"

namespace collcomm::detail {

Status hostRunCollective(const HostCollArgs& args, const HostWaitContext& ctx) {
  switch (args.kind) {
    case CollKind::kAllReduce: return hostRunAllReduce(args, ctx);
    case CollKind::kReduce: return hostRunReduce(args, ctx);
    case CollKind::kReduceScatter: return hostRunReduceScatter(args, ctx);
    case CollKind::kBroadcast:
    case CollKind::kAllGather: return hostRunCopyCollective(args, ctx);
    default: break;
  }
  return CC_ERROR(Status::kInternalError, "%s is not a ring collective", collName(args.kind));
}

}  // namespace collcomm::detail
