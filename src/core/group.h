// ccGroupStart/ccGroupEnd: per-thread batching. Operations on a communicator are queued in call
// order; communicator creation (ccCommInitRank, ccCommSplit) inside a group is deferred too. Each
// communicator's share (its init, then its splits, then its operations) runs in that order on one
// thread, the shares of different communicators concurrently: so one thread can create and drive
// all the ranks of a job, and a send/recv exchange among peers cannot deadlock.
//
// Blocking communicators: ccGroupEnd runs the first share itself and hands the others to their
// communicators' workers (core/comm_worker.h), and returns when all are done. Non-blocking ones:
// every share goes to its worker and ccGroupEnd returns ccInProgress (core/async.h). A group may
// not mix the two (as in NCCL).
#pragma once

#include <functional>

#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

struct Op;

int groupDepth();
Status groupStart();
// Returns Status::kInProgress when the group's communicators are non-blocking.
Status groupEnd();
// Queues an operation that has passed its checks.
Status groupQueue(ccComm* comm, const Op& op);
// Queues the setup of `comm` (from newComm, handed to the user as *out). If it fails in a blocking
// group, ccGroupEnd frees the communicator and sets *out to NULL.
Status groupQueueInit(ccComm* comm, ccComm** out, std::function<Status()> setup);
// Queues a job that runs with `comm`'s share (a split over it).
Status groupQueueJob(ccComm* comm, std::function<Status()> job);
// Ends the outermost group without running it: the estimated time of its operations (us; the
// slowest communicator's share). Refused, with the group left as it was, for a group that creates
// or splits communicators or holds a communicator the model does not cover.
Status groupSimulateEnd(double* estimatedUs);
// Drops whatever this thread queued for `comm` (it is being destroyed or aborted).
void groupForget(const ccComm* comm);

}  // namespace collcomm::detail
