// The GPU planner's picture of a communicator's devices: the rings the topology gives its GPUs
// (plan/ring_channels.h), which the cost model prices (plan/tuner.h planGpuCollective). Setup tier.
#pragma once

#include "core/comm.h"

namespace collcomm::detail {

// Sets comm->gpuModel and comm->gpuRingRanks where each rank has a device of its own and the
// topology (detected, or COLLCOMM_TOPO_FILE) holds them all; otherwise leaves them unset and says
// why in an INFO line, and the planner keeps its fixed choices. Never fails init: a plan without
// the model still runs. Every rank computes the same model from the same process-wide topology
// and the bus ids every rank was told (PeerInfo::deviceBusId), so they plan alike.
void describeGpuRings(ccComm* comm);

}  // namespace collcomm::detail
