// The communicator's side of a plan (op_plan.h).
#include "core/op_plan.h"

#include <mutex>

namespace collcomm::detail {
namespace {

// Read once: channels, rings and steps do not change after init (the ring step is the one every
// rank agreed on, core/init.cc agreeRingStep).
void makeShape(ccComm* comm) {
  CommPlans& p = comm->plans;
  for (const Channel& ch : comm->channels) p.rings.push_back(PlanRing{ch.ringRanks.data(), ch.ringPos});
  PlanShape& s = p.shape;
  s.rank = comm->rank;
  s.nranks = comm->nranks;
  s.gpu = comm->gpu != nullptr;
  s.nChannels = static_cast<int>(comm->channels.size());
  s.rings = p.rings.data();
  s.maxGpuChannels = comm->gpu ? comm->gpu->maxChannels() : 0;
  s.reach = comm->directReach;
  s.overNet = comm->usesNet;
  const bool connected = comm->nranks > 1 && !comm->channels.empty();
  const SendConn* send = connected ? &comm->channels[0].send : nullptr;
  s.simpleStepBytes = connected ? send->simpleStepMax : comm->fifoSizes.ring.simpleStepBytes;
  s.llStepBytes = (connected ? send->llStepLines : comm->fifoSizes.ring.llStepLines) * kLlBytesPerLine;
}

}  // namespace

Plan planOp(ccComm* comm, CollKind kind, size_t count, ccDataType_t dtype, int root) {
  std::call_once(comm->plans.shapeOnce, makeShape, comm);
  return planFor(comm->tuner, PlanOp{kind, count, dtype, root}, comm->plans.shape);
}

}  // namespace collcomm::detail
