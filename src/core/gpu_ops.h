// A GPU communicator's operations: checked against what the device executor can run, planned,
// and handed to it (device/executor.h). Core's only door to the device.
#pragma once

#include "common/status.h"
#include "core/comm.h"
#include "core/enqueue.h"

namespace collcomm::detail {

// Everything about `op` that only a GPU communicator checks: device buffers, device-resident
// scalars. Nothing is queued when it fails.
Status checkGpuOp(ccComm* comm, const Op& op);

// Plans collective `op` and enqueues its kernel on op.stream; returns without waiting for it.
// (Point-to-point batches go through runOps to the executor's runP2p, as on host communicators.)
Status runGpuOp(ccComm* comm, const Op& op);

// Collectives ops[0..n) of a group, in order: a run of them on one stream whose plans need no
// connection made first goes to the executor as one (Executor::runGroup: one launch for those one
// ring kernel carries together); the others as runGpuOp. Stops at the first that fails.
Status runGpuOps(ccComm* comm, const Op* ops, size_t n);

// kOk while no kernel of the communicator has failed; else records the failure (asyncError,
// lastError) and returns its code.
Status pollGpuFailure(ccComm* comm);

}  // namespace collcomm::detail
