// ccGroupStart/ccGroupEnd: per-thread batching. Operations on a communicator are queued in call
// order; communicator creation (ccCommInitRank, ccCommSplit) inside a group is deferred too.
// ccGroupEnd runs every communicator's queue and every deferred creation concurrently, one thread
// each (the caller takes the first), and returns when all are done — so one thread can drive all
// the ranks of a ccCommInitAll, and a send/recv exchange among peers cannot deadlock.
#pragma once

#include <functional>

#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

struct Op;

int groupDepth();
Status groupStart();
Status groupEnd();
// Queues an operation that has passed its checks.
void groupQueue(ccComm* comm, const Op& op);
// Queues a deferred job (communicator creation); `comm` names it in errors (may be null).
void groupDefer(std::function<Status()> job);
// Drops whatever this thread queued for `comm` (it is being destroyed or aborted).
void groupForget(const ccComm* comm);

}  // namespace collcomm::detail
