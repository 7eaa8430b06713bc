// Non-blocking communicators (config.blocking = 0) as NCCL defines them: init, operations and
// groups queue their work on the communicator's worker and return ccInProgress; the caller polls
// ccCommGetAsyncError, which says ccInProgress until the queued work has finished, then
// ccSuccess or the first failure (its sentence then in ccGetLastError(comm)). After a failure the
// rest of the queue is not run: a failed communicator is only good for ccCommDestroy/Abort.
#pragma once

#include "collcomm.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// The communicator's worker, made on first use (by the thread that owns the communicator).
CommWorker& workerOf(ccComm* comm);

// Queues `job` on a non-blocking communicator's worker; a failure is kept for
// ccCommGetAsyncError. Returns Status::kInProgress.
Status submitAsync(ccComm* comm, CommWorker::Job job);

// What ccCommGetAsyncError reports: ccInProgress while queued work runs, then the first failure
// (copied to comm->lastError) or ccSuccess.
ccResult_t asyncState(ccComm* comm);

// Refuses calls that change the communicator's state while its worker still runs queued work
// (NCCL asks users to wait for ccSuccess first; here the call says so instead of racing).
Status checkNoWorkInProgress(const ccComm* comm, const char* call);

}  // namespace collcomm::detail
