// ccGroupSimulateEnd's estimate of one communicator's queued operations (plan/host_model.h).
// Control tier: plans each operation as it would run, moves nothing.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "core/comm.h"
#include "core/enqueue.h"

namespace collcomm::detail {

// The estimated time, in us, of `ops` run one after another on `comm` (a connected host
// communicator). ccInvalidUsage with a sentence for a communicator the model does not cover.
Status estimateOpsUs(ccComm* comm, const Op* ops, size_t nOps, double* us);

}  // namespace collcomm::detail
