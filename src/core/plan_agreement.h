// What each rank of a communicator works out alone and every rank must share, agreed once at init
// (setup tier). Each rank plans every operation by itself; ranks that plan one collective
// differently (one forced to Direct, another on the ring; one ring connecting four channels and
// another two) wait for each other until COLLCOMM_TIMEOUT and then blame a peer. So:
//   - the planner's settings (COLLCOMM_ALGO, _PROTO, the thresholds, the ring order, the
//     point-to-point run size) must be the same on every rank: a difference fails init at once on
//     every rank with ccInvalidUsage naming the variable, two ranks and their values;
//   - the channels each rank would connect (its config, COLLCOMM_MIN/MAX_NCHANNELS) may differ:
//     every rank connects the least of them;
//   - a GPU communicator's topology model (core/gpu_model.h), which each process reads from its own
//     topology: where two ranks' models differ, every rank plans without one.
#pragma once

#include "common/deadline.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// channelsWanted: the rings this rank would connect. On success *channels is what every rank
// connects, and comm->gpuModel / gpuRingRanks are either the same on every rank or cleared.
Status agreeOnPlan(ccComm* comm, int channelsWanted, Deadline deadline, int* channels);

}  // namespace collcomm::detail
