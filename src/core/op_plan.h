// The plan of a communicator's operation (plan/plan.h): what the communicator brings to it, made
// once connected, and its logging. Control tier: every collective calls planOp and notePlan.
#pragma once

#include "core/comm.h"
#include "core/enqueue.h"
#include "plan/plan.h"

namespace collcomm::detail {

// The plan for `op`, whose arguments have been checked. Host and GPU communicators alike (a GPU
// communicator plans with planGpuCollective, as its launch does). Safe from any thread once the
// communicator is connected: it reads the communicator and makes its shape once.
// Made once, on first use (op_plan.cc).
void makeShape(ccComm* comm);
inline Plan planOp(ccComm* comm, CollKind kind, size_t count, ccDataType_t dtype, int root) {
  if (!comm->plans.shapeReady.load(std::memory_order_acquire)) makeShape(comm);
  // Whether NET is in use changes after init (a p2p batch's first NET connection): read per call.
  PlanShape shape = comm->plans.shape;
  shape.overNet = comm->usesNet;
  return planFor(comm->tuner, PlanOp{kind, count, dtype, root}, shape);
}
inline Plan planOp(ccComm* comm, const Op& op) { return planOp(comm, op.kind, op.count, op.dtype, op.root); }

// What an executor is handed for `op` planned as `plan` (the same for host and GPU communicators;
// the host-only fields keep their defaults on GPU plans).
inline ExecColl execCollOf(const ccComm* comm, const Op& op, const Plan& plan) {
  ExecColl coll{op.kind,
                plan.algo,
                plan.proto,
                op.dtype,
                collReduces(op.kind) ? opSpec(comm, op) : RedOpSpec{RedOpKind::kSum, 0},
                op.sendbuff,
                op.recvbuff,
                op.count,
                op.root,
                plan.nChannels};
  coll.builtinOp = collReduces(op.kind) && static_cast<int>(op.op) < ccNumOps ? static_cast<int>(op.op) : -1;
  coll.streamResults = plan.streamResults;
  coll.streamSteps = plan.streamSteps;
  coll.streamStepsAlways = plan.streamStepsAlways;
  return coll;
}

// Logs `plan` (every operation at TUNING, each distinct plan once at PLAN); one branch with INFO
// off. By the thread running the communicator's operations.
inline void notePlan(ccComm* comm, const Plan& plan) { comm->plans.log.note(plan); }

}  // namespace collcomm::detail
