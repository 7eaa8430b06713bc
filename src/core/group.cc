// Per-thread group state, and each communicator's share run at ccGroupEnd.
#include "core/group.h"

#include <utility>
#include <vector>

#include "core/async.h"
#include "core/enqueue.h"
#include "core/init.h"
#include "core/simulate.h"
#include "device/executor.h"

namespace collcomm::detail {
namespace {

// One communicator's part of a group, run in this order on one thread.
struct Share {
  ccComm* comm = nullptr;
  ccComm** initOut = nullptr;  // set when the share starts with the communicator's setup
  std::function<Status()> init;
  std::vector<std::function<Status()>> jobs;
  std::vector<Op> ops;
};

struct GroupState {
  std::vector<Share> shares;
  int blocking = -1;  // the group's mode, from its first communicator
};

thread_local GroupState tGroup;
// ccGroupStart nesting depth, apart from the queues: every operation reads it, and this way the
// read is one %fs-relative load (initial-exec, trivially constructed) instead of a TLS lookup and
// the queues' lazy construction.
[[gnu::tls_model("initial-exec")]] constinit thread_local int tGroupDepth = 0;

// The share of `comm` in this thread's group, made on first use; refuses a communicator whose
// blocking mode differs from the group's.
Status shareOf(ccComm* comm, Share** out) {
  for (Share& s : tGroup.shares) {
    if (s.comm == comm) {
      *out = &s;
      return kOk;
    }
  }
  if (tGroup.blocking == -1) tGroup.blocking = comm->config.blocking;
  if (tGroup.blocking != comm->config.blocking)
    return CC_ERROR(Status::kInvalidArgument,
                    "rank %d's communicator is %sblocking but this group already holds %sblocking ones; blocking and "
                    "non-blocking communicators cannot share a group",
                    comm->rank, comm->config.blocking ? "" : "non-", tGroup.blocking ? "" : "non-");
  tGroup.shares.push_back(Share{});
  tGroup.shares.back().comm = comm;
  *out = &tGroup.shares.back();
  return kOk;
}

Status runShare(const Share& s) {
  if (s.init) CC_CHECK(s.init());
  for (const auto& job : s.jobs) CC_CHECK(job());
  if (!s.ops.empty()) CC_CHECK(runOps(s.comm, s.ops.data(), s.ops.size()));
  return kOk;
}

// A GPU communicator's share that only enqueues kernels returns at once: it runs on the calling
// thread, no hand-off to a worker. One that must first connect to a peer waits for that peer's
// share, and one whose launches wait for other ranks of the process (a fused launch) waits for
// theirs, so those run on their workers beside the others.
bool launchesOnly(const Share& s) {
  return s.comm->gpu() && !s.comm->gpu()->launchesWithOthers() && !s.init && s.jobs.empty() &&
         !opsNeedConnecting(s.comm, s.ops.data(), s.ops.size());
}

// Non-blocking: every share to its worker; failures are the communicators' async errors.
Status endNonBlocking(std::vector<Share>& shares) {
  for (Share& s : shares) (void)submitAsync(s.comm, [share = std::move(s)] { return runShare(share); });
  return Status::kInProgress;
}

Status reportOutcomes(std::vector<Share>& shares, const std::vector<JobOutcome>& outcomes);

// Blocking: the first share here, the others on their workers; returns when all are done.
Status endBlocking(std::vector<Share>& shares) {
  std::vector<JobOutcome> outcomes(shares.size());
  std::vector<uint64_t> tickets(shares.size(), 0);
  // Decided once, before any share runs: a worker's share connects its communicator, after which
  // the same question would answer otherwise (and the share would run twice).
  std::vector<bool> onWorker(shares.size(), false);
  for (size_t i = 1; i < shares.size(); ++i) onWorker[i] = !launchesOnly(shares[i]);
  // A share that runs on a worker cannot launch on cudaStreamPerThread, which would name the
  // worker's stream: then nothing of the group runs, and every share fails with the sentence.
  for (size_t i = 0; i < shares.size(); ++i) {
    if (!onWorker[i]) continue;
    for (const Op& op : shares[i].ops) {
      if (!isPerThreadStream(op.stream)) continue;
      const Status refused = CC_ERROR(
          Status::kInvalidUsage,
          "%s on rank %d: this group's part for that communicator runs on its worker thread (it connects first, "
          "or its ranks launch together with others of this process), where cudaStreamPerThread would name the "
          "worker's stream, not the caller's: pass a stream made with cudaStreamCreate",
          collName(op.kind), shares[i].comm->rank);
      for (JobOutcome& o : outcomes) o = JobOutcome{refused, threadLastError()};
      return reportOutcomes(shares, outcomes);
    }
  }
  // Marked busy while their shares run: ccCommAbort from another thread waits for them to leave.
  for (Share& s : shares) s.comm->busy.fetch_add(1);
  for (size_t i = 1; i < shares.size(); ++i)
    if (onWorker[i])
      tickets[i] = workerOf(shares[i].comm).submit([&share = shares[i]] { return runShare(share); }, &outcomes[i]);
  for (size_t i = 0; i < shares.size(); ++i) {
    if (onWorker[i]) continue;
    clearThreadLastError();
    outcomes[i].status = runShare(shares[i]);
    if (!isOk(outcomes[i].status)) outcomes[i].message = threadLastError();
  }
  for (size_t i = 1; i < shares.size(); ++i)
    if (onWorker[i]) shares[i].comm->worker->wait(tickets[i]);
  for (Share& s : shares) s.comm->busy.fetch_sub(1);
  return reportOutcomes(shares, outcomes);
}

// The group's result from its shares' outcomes: the first failure (its sentence on the calling
// thread); communicators whose creation failed are freed, the others keep their sentence.
Status reportOutcomes(std::vector<Share>& shares, const std::vector<JobOutcome>& outcomes) {
  Status first = kOk;
  const std::string* firstMessage = nullptr;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (isOk(outcomes[i].status)) continue;
    if (isOk(first)) {
      first = outcomes[i].status;
      firstMessage = &outcomes[i].message;
    }
    if (shares[i].initOut != nullptr) {
      // A communicator that never came up is not the user's to destroy.
      commFree(shares[i].comm);
      *shares[i].initOut = nullptr;
    } else {
      shares[i].comm->lastError = outcomes[i].message;
    }
  }
  // The first failure's sentence, on the calling thread, where ccGetLastError(NULL) looks.
  if (!isOk(first)) setThreadLastError(*firstMessage);
  return first;
}

}  // namespace

int groupDepth() { return tGroupDepth; }

Status groupStart() {
  tGroupDepth++;
  return kOk;
}

Status groupQueue(ccComm* comm, const Op& op) {
  Share* s = nullptr;
  CC_CHECK(shareOf(comm, &s));
  s->ops.push_back(op);
  return kOk;
}

Status groupQueueInit(ccComm* comm, ccComm** out, std::function<Status()> setup) {
  Share* s = nullptr;
  CC_CHECK(shareOf(comm, &s));
  s->initOut = out;
  s->init = std::move(setup);
  return kOk;
}

Status groupQueueJob(ccComm* comm, std::function<Status()> job) {
  Share* s = nullptr;
  CC_CHECK(shareOf(comm, &s));
  s->jobs.push_back(std::move(job));
  return kOk;
}

void groupForget(const ccComm* comm) {
  auto& q = tGroup.shares;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].comm == comm) {
      q.erase(q.begin() + static_cast<long>(i));
      return;
    }
  }
}

Status groupEnd() {
  if (tGroupDepth == 0) return CC_ERROR(Status::kInvalidUsage, "ccGroupEnd called without a matching ccGroupStart");
  if (--tGroupDepth > 0) return kOk;
  std::vector<Share> shares = std::move(tGroup.shares);
  const bool blocking = tGroup.blocking != 0;
  tGroup.shares.clear();
  tGroup.blocking = -1;
  if (shares.empty()) return kOk;
  return blocking ? endBlocking(shares) : endNonBlocking(shares);
}

Status groupSimulateEnd(double* estimatedUs) {
  if (tGroupDepth == 0)
    return CC_ERROR(Status::kInvalidUsage, "ccGroupSimulateEnd called without a matching ccGroupStart");
  if (tGroupDepth > 1)
    return CC_ERROR(Status::kInvalidUsage,
                    "ccGroupSimulateEnd inside a nested group: the outer group runs its operations; simulate the "
                    "outermost group");
  // Everything is checked before the group is touched: a refusal leaves it open for ccGroupEnd.
  double slowest = 0;
  for (const Share& s : tGroup.shares) {
    if (s.init || !s.jobs.empty())
      return CC_ERROR(Status::kInvalidUsage,
                      "ccGroupSimulateEnd: the group creates or splits a communicator (rank %d's), which a simulation "
                      "cannot do without doing it; end this group with ccGroupEnd",
                      s.comm->rank);
    double us = 0;
    CC_CHECK(estimateOpsUs(s.comm, s.ops.data(), s.ops.size(), &us));
    slowest = us > slowest ? us : slowest;
  }
  tGroupDepth = 0;
  tGroup.shares.clear();
  tGroup.blocking = -1;
  *estimatedUs = slowest;
  return kOk;
}

}  // namespace collcomm::detail
