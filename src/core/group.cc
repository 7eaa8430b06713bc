// Per-thread group state and concurrent execution at ccGroupEnd.
#include "core/group.h"

#include <thread>
#include <utility>
#include <vector>

#include "core/enqueue.h"

namespace collcomm::detail {
namespace {

struct GroupState {
  std::vector<std::pair<ccComm*, std::vector<Op>>> queues;
  std::vector<std::function<Status()>> deferred;
};

thread_local GroupState tGroup;
// ccGroupStart nesting depth, apart from the queues: every operation reads it, and this way the
// read is one %fs-relative load (initial-exec, trivially constructed) instead of a TLS lookup and
// the queues' lazy construction.
[[gnu::tls_model("initial-exec")]] constinit thread_local int tGroupDepth = 0;

// A job that records its failure sentence on its communicator (errors are per thread, and the
// job may run on another thread than the caller).
struct JobResult {
  Status status = kOk;
  std::string message;
};

}  // namespace

int groupDepth() { return tGroupDepth; }

Status groupStart() {
  tGroupDepth++;
  return kOk;
}

void groupQueue(ccComm* comm, const Op& op) {
  for (auto& [c, ops] : tGroup.queues) {
    if (c == comm) {
      ops.push_back(op);
      return;
    }
  }
  tGroup.queues.push_back({comm, {op}});
}

void groupDefer(std::function<Status()> job) { tGroup.deferred.push_back(std::move(job)); }

void groupForget(const ccComm* comm) {
  auto& q = tGroup.queues;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].first == comm) {
      q.erase(q.begin() + static_cast<long>(i));
      return;
    }
  }
}

Status groupEnd() {
  if (tGroupDepth == 0)
    return CC_ERROR(Status::kInvalidUsage, "ccGroupEnd called without a matching ccGroupStart");
  if (--tGroupDepth > 0) return kOk;
  auto queues = std::move(tGroup.queues);
  auto deferred = std::move(tGroup.deferred);
  tGroup.queues.clear();
  tGroup.deferred.clear();

  std::vector<std::function<Status()>> jobs = std::move(deferred);
  for (auto& [comm, ops] : queues) {
    jobs.push_back([comm = comm, ops = std::move(ops)] {
      comm->busy.fetch_add(1);  // ccCommAbort waits for it (no ApiScope holds this comm here)
      Status s = runOps(comm, ops.data(), ops.size());
      comm->busy.fetch_sub(1);
      if (!isOk(s)) comm->lastError = threadLastError();
      return s;
    });
  }
  if (jobs.empty()) return kOk;

  std::vector<JobResult> results(jobs.size());
  auto runJob = [&](size_t i) {
    clearThreadLastError();
    results[i].status = jobs[i]();
    if (!isOk(results[i].status)) results[i].message = threadLastError();
  };
  std::vector<std::thread> threads;
  threads.reserve(jobs.size() - 1);
  for (size_t i = 1; i < jobs.size(); ++i) threads.emplace_back(runJob, i);
  runJob(0);
  for (auto& t : threads) t.join();

  for (const JobResult& r : results) {
    if (!isOk(r.status)) {
      // The first failure's sentence, on the calling thread, where ccGetLastError(NULL) looks.
      setThreadLastError(r.message);
      return r.status;
    }
  }
  return kOk;
}

}  // namespace collcomm::detail
