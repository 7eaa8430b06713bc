// The host executor's construction and its entry points: the algorithm the plan named, on the
// calling thread.
#include "device/host/host_executor.h"

#include <memory>

#include "device/host/core_distance.h"
#include "device/host/simd_level.h"

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

HostExecutor::HostExecutor(const ExecSetup& setup) : setup_(setup) {}

HostWaitContext HostExecutor::waitContext(const ExecOp& op) const {
  HostWaitContext ctx;
  ctx.abortFlag = setup_.abortFlag;
  ctx.deadline = op.deadline;
  ctx.timeoutSeconds = setup_.timeoutSeconds;
  ctx.spinCount = op.overNet ? setup_.netSpinCount : setup_.spinCount;
  ctx.yieldEachRound = setup_.spinCount == 0;
  ctx.parkAfterNs = op.overNet ? 0 : setup_.parkAfterNs;
  if (op.overNet) {
    ctx.progress = setup_.progress;
    ctx.sendNow = setup_.sendNow;
    ctx.sendNowMinBytes = setup_.sendNowMinBytes;
  }
  ctx.opName = op.name;
  ctx.rank = setup_.rank;
  ctx.nranks = setup_.nranks;
  ctx.hostNames = setup_.hostNames;
  ctx.failure = op.failure;
  ctx.peers = setup_.peers.empty() ? nullptr : setup_.peers.data();
  return ctx;
}

Status HostExecutor::run(const ExecColl& c, const ExecOp& op) {
  HostWaitContext ctx = waitContext(op);
  if (c.algo == Algorithm::kOneShot && setup_.nranks > 2) return runOneShotAllReduce(c, ctx);
  ctx.streamResults = c.streamResults;
  if (c.algo == Algorithm::kDirect) return runDirect(c, ctx);
  // The ring (and the one-shot AllReduce on two ranks, whose ring is both ways to the one peer).
  ctx.streamSteps = c.streamSteps;
  ctx.streamStepsAlways = c.streamStepsAlways;
  const HostCollArgs args{collWorkOf(c, setup_.nranks), setup_.channels.data(), c.trees};
  return hostRunCollective(args, ctx);
}

bool HostExecutor::receiversFindFar(int nChannels) const {
  for (int c = 0; c < nChannels && c < static_cast<int>(setup_.channels.size()); ++c) {
    const SendConn* send = setup_.channels[c].send;
    if (send != nullptr && send->ctrl != nullptr && receiverFindsFar(*send)) return true;
  }
  return false;
}

Status HostExecutor::runP2p(ExecTransfer* transfers, size_t n, const ExecOp& op) {
  if (n > setup_.maxTransfersPerRun)
    return CC_ERROR(Status::kInternalError,
                    "%s on rank %d: a batch of %zu point-to-point transfers, where COLLCOMM_P2P_MAX_TRANSFERS allows "
                    "%zu per run; core runs larger batches in rounds (core/p2p_rounds.h)",
                    op.name, setup_.rank, n, setup_.maxTransfersPerRun);
  return hostRunP2p(transfers, n, setup_.rank, waitContext(op));
}

Status makeHostExecutor(const ExecSetup& setup, std::unique_ptr<Executor>* out) {
  calibrateDistanceClock();
  hostSimdLevel();  // chosen (and logged) here rather than in the first operation
  *out = std::make_unique<HostExecutor>(setup);
  return kOk;
}

}  // namespace collcomm::detail
