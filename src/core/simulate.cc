// The estimate behind ccGroupSimulateEnd (simulate.h): the plan each operation would run with,
// timed by the host cost model (host communicators) or the GPU cost model over the topology's
// rings (GPU communicators with one rank a device).
#include "core/simulate.h"

#include "core/async.h"
#include "core/op_plan.h"
#include "device/dtypes.h"
#include "plan/cost_model.h"
#include "plan/host_model.h"

namespace collcomm::detail {
namespace {

// The bytes a point-to-point kind moves between this rank and its peers, its own part left out
// (a local copy, below the model's resolution).
void peerBytes(const ccComm* comm, const Op& op, size_t* send, size_t* recv) {
  const size_t elem = dtypeSize(op.dtype), own = op.count * elem;
  bufferSpans(comm, op, elem, send, recv);
  const bool root = op.root == comm->rank;
  if (op.kind == CollKind::kAlltoAll || (op.kind == CollKind::kScatter && root)) *send -= own;
  if (op.kind == CollKind::kAlltoAll || (op.kind == CollKind::kGather && root)) *recv -= own;
  if (op.kind == CollKind::kGather && root) *send = 0;
  if (op.kind == CollKind::kScatter && root) *recv = 0;
}

// A GPU communicator's operations priced by the cost model over its rings (core/gpu_model.h).
Status estimateGpuOpsUs(ccComm* comm, const Op* ops, size_t nOps, double* us) {
  if (!comm->gpuModel)
    return CC_ERROR(Status::kInvalidUsage,
                    "ccGroupSimulateEnd: rank %d's GPU communicator has no cost model: %s (docs/planning.md, \"GPU "
                    "communicators\")",
                    comm->rank,
                    comm->nranks < 2 ? "it has one rank"
                    : comm->mostRanksOnADevice > 1
                        ? "its ranks share a device, where the planner's choices are measured"
                        : "the topology did not hold its devices (COLLCOMM_DEBUG=INFO says why)");
  double total = 0;
  for (size_t i = 0; i < nOps; ++i) {
    if (isP2pKind(ops[i].kind))
      return CC_ERROR(Status::kInvalidUsage,
                      "ccGroupSimulateEnd: rank %d's group holds a %s on a GPU communicator; the GPU cost model prices "
                      "collectives only",
                      comm->rank, collName(ops[i].kind));
    const Plan p = planOp(comm, ops[i]);
    const CostBreakdown c = modelCost(*comm->gpuModel, p.algo, p.kind, p.bytes,
                                      p.proto == Protocol::kLL ? ModelProto::kLL : ModelProto::kSimple, p.nChannels);
    if (!c.applies)
      return CC_ERROR(Status::kInvalidUsage,
                      "ccGroupSimulateEnd: rank %d's %s runs %s, which the GPU cost model does not price", comm->rank,
                      collName(p.kind), algorithmName(p.algo));
    total += c.timeUs;
  }
  *us = total;
  return kOk;
}

}  // namespace

Status estimateOpsUs(ccComm* comm, const Op* ops, size_t nOps, double* us) {
  // A non-blocking communicator's worker may still be making it (or running earlier operations,
  // which may connect NET): its shape, executor and GPU model are read only when the worker is idle.
  CC_CHECK(checkNoWorkInProgress(comm, "ccGroupSimulateEnd"));
  if (comm->nranks > 1 && comm->channels.empty())
    return CC_ERROR(Status::kInvalidUsage,
                    "ccGroupSimulateEnd: rank %d's communicator is not connected yet (made in a group whose ccGroupEnd "
                    "has not run)",
                    comm->rank);
  if (!comm->plans.shapeReady.load(std::memory_order_acquire)) makeShape(comm);
  if (comm->gpu()) return estimateGpuOpsUs(comm, ops, nOps, us);
  PlanShape shape = comm->plans.shape;
  shape.overNet = comm->usesNet;
  const HostLinkClass cls = hostLinkClassOf(shape);
  double total = 0;
  for (size_t i = 0; i < nOps;) {
    if (!isP2pKind(ops[i].kind)) {
      total += hostEstimateUs(planOp(comm, ops[i]), cls);
      ++i;
      continue;
    }
    // Consecutive point-to-point operations run as one batch, all at once (as runOps runs them).
    size_t send = 0, recv = 0;
    for (; i < nOps && isP2pKind(ops[i].kind); ++i) {
      size_t s = 0, r = 0;
      peerBytes(comm, ops[i], &s, &r);
      send += s;
      recv += r;
    }
    total += hostEstimateP2pUs(send, recv, cls);
  }
  *us = total;
  return kOk;
}

}  // namespace collcomm::detail
