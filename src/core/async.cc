// Non-blocking communicators: queued jobs, their failures, and the state ccCommGetAsyncError reads.
#include "core/async.h"

#include <utility>

#include "core/gpu_ops.h"

namespace collcomm::detail {

CommWorker& workerOf(ccComm* comm) {
  if (!comm->worker) comm->worker = std::make_unique<CommWorker>();
  return *comm->worker;
}

Status submitAsync(ccComm* comm, CommWorker::Job job) {
  workerOf(comm).submit(
      [comm, job = std::move(job)]() -> Status {
        // An earlier job failed: the communicator is broken and the rest of its queue is not run.
        if (const int err = comm->asyncError.load(); err != ccSuccess) return static_cast<Status>(err);
        const Status s = job();
        if (!isOk(s)) {
          // The sentence first: ccCommGetAsyncError reads it once the worker is idle.
          std::lock_guard<std::mutex> lock(comm->asyncMu);
          comm->asyncMessage = threadLastError();
          int expected = ccSuccess;
          comm->asyncError.compare_exchange_strong(expected, static_cast<int>(s));
        }
        return s;
      },
      nullptr);
  return Status::kInProgress;
}

ccResult_t asyncState(ccComm* comm) {
  // Idle first (acquire): a failure's sentence is written before its job counts as done.
  if (comm->worker && comm->worker->busy()) return ccInProgress;
  if (comm->gpu()) (void)pollGpuFailure(comm);  // a kernel's failure, as the stream ran it
  const int err = comm->asyncError.load();
  if (err != ccSuccess) {
    std::lock_guard<std::mutex> lock(comm->asyncMu);
    if (!comm->asyncMessage.empty()) comm->lastError = comm->asyncMessage;
  }
  return static_cast<ccResult_t>(err);
}

Status checkNoWorkInProgress(const ccComm* comm, const char* call) {
  if (comm->worker && comm->worker->busy())
    return CC_ERROR(Status::kInvalidUsage,
                    "%s: rank %d's communicator still has work in progress; poll ccCommGetAsyncError until it is "
                    "no longer ccInProgress first",
                    call, comm->rank);
  return kOk;
}

}  // namespace collcomm::detail
