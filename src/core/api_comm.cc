// extern "C" shims for communicator lifecycle, queries, errors and version.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "common/asymmetric_fence.h"
#include "core/abort_phases.h"
#include "core/api_scope.h"
#include "core/async.h"
#include "core/enqueue.h"
#include "core/group.h"
#include "core/init.h"
#include "core/shrink.h"
#include "core/split.h"

using namespace collcomm::detail;

namespace {

Status initRank(ccComm** out, int nranks, const ccUniqueId& commId, int rank, const ccConfig_t* config) {
  if (out == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommInitRank: comm (the output pointer) is NULL");
  CommConfig cfg;
  CC_CHECK(resolveConfig(config, &cfg));
  CC_CHECK(checkRankArgs(nranks, rank));
  UniqueIdData id{};
  CC_CHECK(decodeUniqueId(commId, &id));
  // The handle exists before its setup runs (as in NCCL): a group or a non-blocking init hands it
  // out at once, and the setup runs later or elsewhere.
  ccComm* comm = newComm(nranks, rank, cfg);
  auto setup = [comm, id] { return commSetup(comm, id); };
  if (groupDepth() > 0) {
    const Status s = groupQueueInit(comm, out, setup);
    if (!isOk(s)) {
      commFree(comm);
      return s;
    }
    *out = comm;
    return kOk;
  }
  if (cfg.blocking == 0) {
    *out = comm;
    return submitAsync(comm, setup);
  }
  const Status s = setup();
  if (!isOk(s)) {
    commFree(comm);
    return s;
  }
  *out = comm;
  return kOk;
}

// NCCL's ccCommInitAll: a fresh id and one ccCommInitRank per entry, in a group (so inside the
// caller's own group the inits run at its ccGroupEnd). All or nothing.
Status initAll(ccComm** comms, int ndev, const int* devlist) {
  if (comms == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommInitAll: comms is NULL");
  if (ndev < 1) return CC_ERROR(Status::kInvalidArgument, "ccCommInitAll: ndev must be at least 1, not %d", ndev);
  CommConfig cfg;
  CC_CHECK(resolveConfig(nullptr, &cfg));
  for (int i = 0; devlist != nullptr && i < ndev; ++i) {
    char what[48];
    snprintf(what, sizeof(what), "ccCommInitAll: devlist[%d]", i);
    CC_CHECK(checkDevice(devlist[i], what));
  }
  UniqueIdData id{};
  CC_CHECK(createUniqueId(&id));
  CC_CHECK(groupStart());
  Status s = kOk;
  int queued = 0;
  for (; queued < ndev && isOk(s); ++queued) {
    CommConfig rankCfg = cfg;
    if (devlist != nullptr) rankCfg.device = devlist[queued];
    ccComm* c = newComm(ndev, queued, rankCfg);
    s = groupQueueInit(c, &comms[queued], [c, id] { return commSetup(c, id); });
    if (isOk(s)) comms[queued] = c;
    else commFree(c);
  }
  if (!isOk(s)) {
    // Refused (a non-blocking group around it): take back what was queued.
    for (int i = 0; i + 1 < queued; ++i) {
      groupForget(comms[i]);
      commFree(comms[i]);
      comms[i] = nullptr;
    }
    (void)groupEnd();
    return s;
  }
  s = groupEnd();
  if (!isOk(s)) {
    // The failed ones are freed and NULL already.
    for (int i = 0; i < ndev; ++i) {
      commFree(comms[i]);
      comms[i] = nullptr;
    }
  }
  return s;
}

// Waits (bounded) for calls on other threads to leave the communicator.
bool waitIdle(ccComm* comm, int selfHolds, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  heavyFence(comm->asymmetricFence);  // an operation entering now sees abortFlag, or is counted here
  while (comm->busy.load() + comm->opsBusy.load(std::memory_order_acquire) > selfHolds) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// How long ccCommShrink's CC_SHRINK_ABORT waits for operations in flight and queued work to stop.
// They see the flag within milliseconds; the margin is for a loaded machine.
constexpr std::chrono::milliseconds kStopLimit{5000};

// What ccCommRevoke and CC_SHRINK_ABORT raise first: operations in flight see the flag (kernels the
// executor's abort word) and leave, later ones are refused.
void raiseStop(ccComm* comm) {
  comm->revoked.store(true);
  comm->abortFlag.store(1);
  if (comm->gpu()) comm->gpu()->abort();
}

// CC_SHRINK_ABORT's stop: ccCommRevoke's, with the bootstrap interrupted until the operations left
// instead of aborted (an operation inside a setup exchange leaves too), and the queued work dropped;
// the bootstrap then serves the shrink. Fails if an operation is still inside after kStopLimit.
Status stopOperations(ccComm* comm) {
  raiseStop(comm);
  comm->interruptBootstrap(true);
  struct Resume {
    ccComm* comm;
    ~Resume() { comm->interruptBootstrap(false); }
  } resume{comm};
  if (comm->worker) {
    comm->worker->stop();
    if (!comm->worker->waitAll(kStopLimit))
      return CC_ERROR(Status::kInvalidUsage, "ccCommShrink: rank %d's queued work did not stop within %.0f s",
                      comm->rank, kStopLimit.count() / 1000.0);
  }
  if (!waitIdle(comm, 1, kStopLimit))
    return CC_ERROR(Status::kInvalidUsage,
                    "ccCommShrink: another thread is still inside rank %d's communicator after %.0f s", comm->rank,
                    kStopLimit.count() / 1000.0);
  return kOk;
}

// CC_SHRINK_DEFAULT's condition: nothing queued and no operation in flight on another thread (it
// would use the bootstrap beside the shrink).
Status checkQuiet(ccComm* comm) {
  CC_CHECK(checkNoWorkInProgress(comm, "ccCommShrink"));
  heavyFence(comm->asymmetricFence);
  if (comm->opsBusy.load(std::memory_order_acquire) != 0)
    return CC_ERROR(Status::kInvalidUsage,
                    "ccCommShrink: another thread is inside an operation of rank %d's communicator; "
                    "CC_SHRINK_DEFAULT needs none (CC_SHRINK_ABORT stops it)",
                    comm->rank);
  return kOk;
}

// An aborted communicator whose worker has stopped: peers learn this rank left, then it is freed.
void abortedFree(ccComm* comm) {
  comm->leaveConnections(comm->rank, kGoneAborted);
  commFree(comm);
}

}  // namespace

extern "C" {

ccResult_t ccGetVersion(int* version) {
  clearThreadLastError();
  if (version == nullptr) return toResult(CC_ERROR(Status::kInvalidArgument, "ccGetVersion: version is NULL"));
  *version = CC_VERSION_CODE;
  return ccSuccess;
}

ccResult_t ccGetUniqueId(ccUniqueId* uniqueId) {
  clearThreadLastError();
  if (uniqueId == nullptr) return toResult(CC_ERROR(Status::kInvalidArgument, "ccGetUniqueId: uniqueId is NULL"));
  UniqueIdData id{};
  Status s = createUniqueId(&id);
  if (isOk(s)) encodeUniqueId(id, uniqueId);
  return toResult(s);
}

ccResult_t ccCommInitRankConfig(ccComm_t* comm, int nranks, ccUniqueId commId, int rank, ccConfig_t* config) {
  clearThreadLastError();
  return toResult(initRank(comm, nranks, commId, rank, config));
}

ccResult_t ccCommInitRank(ccComm_t* comm, int nranks, ccUniqueId commId, int rank) {
  clearThreadLastError();
  return toResult(initRank(comm, nranks, commId, rank, nullptr));
}

ccResult_t ccCommInitAll(ccComm_t* comms, int ndev, const int* devlist) {
  clearThreadLastError();
  return toResult(initAll(comms, ndev, devlist));
}

ccResult_t ccCommSplit(ccComm_t comm, int color, int key, ccComm_t* newcomm, ccConfig_t* config) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && newcomm == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommSplit: newcomm is NULL");
  CommConfig cfg;
  if (isOk(s)) {
    cfg = comm->config;
    if (config != nullptr) s = resolveConfig(config, &cfg);
  }
  if (isOk(s)) {
    if (groupDepth() > 0) {
      // Runs with the parent's share of the group, after the parent's setup if that is queued too.
      *newcomm = nullptr;
      s = groupQueueJob(comm, [=] { return commSplit(comm, color, key, cfg, newcomm); });
    } else {
      // Outside a group the split runs here, non-blocking parent or not: the new communicator
      // comes back ready.
      s = checkNoWorkInProgress(comm, "ccCommSplit");
      if (isOk(s) && comm->revoked.load())
        s = CC_ERROR(Status::kInvalidUsage,
                     "ccCommSplit: rank %d's communicator was revoked (ccCommRevoke, or ccCommShrink with "
                     "CC_SHRINK_ABORT); destroy it, or shrink it",
                     comm->rank);
      if (isOk(s)) s = commSplit(comm, color, key, cfg, newcomm);
    }
  }
  return scope.finish(s);
}

ccResult_t ccCommShrink(ccComm_t comm, int* excludeRanksList, int excludeRanksCount, ccComm_t* newcomm,
                        ccConfig_t* config, int shrinkFlags) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && newcomm == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommShrink: newcomm is NULL");
  if (isOk(s) && shrinkFlags != CC_SHRINK_DEFAULT && shrinkFlags != CC_SHRINK_ABORT)
    s = CC_ERROR(Status::kInvalidArgument,
                 "ccCommShrink: shrinkFlags %d is neither CC_SHRINK_DEFAULT (0) nor CC_SHRINK_ABORT (1)", shrinkFlags);
  std::vector<int> excluded;
  if (isOk(s)) s = checkExcludedRanks(comm, excludeRanksList, excludeRanksCount, &excluded);
  CommConfig cfg;
  if (isOk(s)) {
    cfg = comm->config;
    if (config != nullptr) s = resolveConfig(config, &cfg);
  }
  const bool grouped = groupDepth() > 0;
  if (isOk(s) && shrinkFlags == CC_SHRINK_ABORT && grouped)
    s = CC_ERROR(Status::kInvalidUsage,
                 "ccCommShrink: CC_SHRINK_ABORT inside a group; call it outside ccGroupStart/ccGroupEnd");
  if (isOk(s) && !grouped) s = checkShrinkable(comm);
  // A call refused so far sends nothing: its peers' shrinks end at their timeout, naming this rank.
  if (!isOk(s)) return scope.finish(s);
  if (grouped) {
    // Runs with the parent's share of the group, as ccCommSplit does.
    *newcomm = nullptr;
    return scope.finish(groupQueueJob(comm, [=] { return commShrink(comm, excluded, cfg, kOk, newcomm); }));
  }
  // Outside a group it runs here, non-blocking parent or not. A rank whose stop or whose parent is
  // not quiet still takes part, to refuse: its peers then fail at once, saying why.
  const Status local = shrinkFlags == CC_SHRINK_ABORT ? stopOperations(comm) : checkQuiet(comm);
  return scope.finish(commShrink(comm, excluded, cfg, local, newcomm));
}

ccResult_t ccCommFinalize(ccComm_t comm) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (!isOk(s)) return scope.finish(s);
  // No operation may follow. Blocking host operations are complete when their calls return;
  // queued work (a non-blocking communicator's) is flushed: this waits for it on a blocking
  // communicator and says ccInProgress on a non-blocking one until ccCommGetAsyncError says it is
  // done.
  comm->finalized = true;
  if (comm->worker && comm->worker->busy()) {
    if (comm->config.blocking == 0) return scope.finish(Status::kInProgress);
    comm->worker->drain();
  }
  return scope.finish(kOk);
}

ccResult_t ccCommDestroy(ccComm_t comm) {
  clearThreadLastError();
  if (comm == nullptr) return ccSuccess;
  Status s = checkComm(comm);
  if (!isOk(s)) return toResult(s);
  groupForget(comm);
  // Queued work (a non-blocking init or operation) is waited for, each step bounded by the
  // communicator's timeout; ccCommAbort is the call that stops it.
  if (comm->worker) comm->worker->drain();
  if (!waitIdle(comm, 0, std::chrono::milliseconds(0)))
    return toResult(CC_ERROR(Status::kInvalidUsage,
                             "ccCommDestroy: rank %d's communicator is in use by another thread; use ccCommAbort to "
                             "stop it",
                             comm->rank));
  commFree(comm);
  return ccSuccess;
}

ccResult_t ccCommAbort(ccComm_t comm) {
  clearThreadLastError();
  if (comm == nullptr) return ccSuccess;
  Status s = checkComm(comm);
  if (!isOk(s)) return toResult(s);
  AbortPhases phases(comm);
  comm->abortFlag.store(1);  // before abortBootstrap's lock: see ccComm::adoptBootstrap
  if (comm->gpu()) comm->gpu()->abort();  // running kernels see it within microseconds and leave
  const bool bootstrapStopped = comm->abortBootstrap();
  groupForget(comm);
  phases.mark("flag");
  if (comm->worker) {
    // Queued work is dropped; the running job sees the flag, or the aborted bootstrap, and ends.
    // Its connections are the worker's until then (an init may still be making them). An init
    // still joining the job (no bootstrap yet) cannot be interrupted: no use waiting for it.
    comm->worker->stop();
    const bool workerDone = comm->worker->waitAll(std::chrono::milliseconds(bootstrapStopped ? 900 : 0));
    phases.mark(workerDone ? "worker" : "worker (still running)");
    const bool idle = waitIdle(comm, 0, std::chrono::milliseconds(900));
    phases.mark(idle ? "other threads" : "other threads (still inside)");
    if (!idle) {
      comm->magic = kCommDeadMagic;  // another thread is still inside: kept (leaked), never pulled from under it
      phases.outcome("kept: another thread is still inside");
      return ccSuccess;
    }
    comm->magic = kCommDeadMagic;
    // A job still running past the limit (an init waiting for the root's answer) ends in its own
    // time; the worker frees the communicator then.
    if (!workerDone && comm->worker->handOff([comm] { abortedFree(comm); })) {
      phases.outcome("handed to the worker's running job");
      return ccSuccess;
    }
    abortedFree(comm);
    phases.mark("leave and free");
    return ccSuccess;
  }
  comm->leaveConnections(comm->rank, kGoneAborted);
  phases.mark("leave");
  // Waits in flight see the flag within milliseconds; past the limit the memory is kept (leaked)
  // rather than pulled from under a thread still inside.
  const bool idle = waitIdle(comm, 0, std::chrono::milliseconds(900));
  phases.mark(idle ? "other threads" : "other threads (still inside)");
  if (idle) {
    commFree(comm);
    phases.mark("free");
  } else {
    comm->magic = kCommDeadMagic;
    phases.outcome("kept: another thread is still inside");
  }
  return ccSuccess;
}

ccResult_t ccCommRevoke(ccComm_t comm, int revokeFlags) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && revokeFlags != CC_REVOKE_DEFAULT)
    s = CC_ERROR(Status::kInvalidArgument, "ccCommRevoke: revokeFlags %d is not CC_REVOKE_DEFAULT (0)", revokeFlags);
  if (!isOk(s)) return scope.finish(s);
  // The same stop as ccCommAbort's, minus the freeing: waits in flight see the flag, kernels the
  // executor's abort word, an init still running its bootstrap's abort. The connections stay
  // the operations' own (another thread may be inside one): an operation that stops tells its
  // peers itself (failOp), and ccCommDestroy/ccCommAbort tell them the rest.
  raiseStop(comm);
  (void)comm->abortBootstrap();
  return scope.finish(kOk);
}

ccResult_t ccCommGetAsyncError(ccComm_t comm, ccResult_t* asyncError) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && asyncError == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommGetAsyncError: asyncError is NULL");
  if (isOk(s)) *asyncError = asyncState(comm);
  return scope.finish(s);
}

ccResult_t ccCommCount(const ccComm_t comm, int* count) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && count == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommCount: count is NULL");
  if (isOk(s)) *count = comm->nranks;
  return scope.finish(s);
}

ccResult_t ccCommDevice(const ccComm_t comm, int* device) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && device == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommDevice: device is NULL");
  if (isOk(s)) *device = comm->config.device;
  return scope.finish(s);
}

ccResult_t ccCommUserRank(const ccComm_t comm, int* rank) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && rank == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommUserRank: rank is NULL");
  if (isOk(s)) *rank = comm->rank;
  return scope.finish(s);
}

const char* ccGetErrorString(ccResult_t result) {
  switch (enumBits(result)) {
    case ccSuccess: return "no error";
    case ccUnhandledCudaError: return "unhandled cuda error (run with COLLCOMM_DEBUG=INFO for details)";
    case ccSystemError: return "unhandled system error (run with COLLCOMM_DEBUG=INFO for details)";
    case ccInternalError: return "internal error - please report this issue to the collcomm developers";
    case ccInvalidArgument: return "invalid argument (run with COLLCOMM_DEBUG=WARN for details)";
    case ccInvalidUsage: return "invalid usage (run with COLLCOMM_DEBUG=WARN for details)";
    case ccRemoteError: return "remote process exited or there was a network error";
    case ccInProgress: return "operation in progress";
    case ccTimeout: return "operation timed out (COLLCOMM_TIMEOUT)";
    default: return "unknown result code";
  }
}

const char* ccGetLastError(ccComm_t comm) {
  if (comm != nullptr && comm->magic == kCommMagic) return comm->lastError.c_str();
  return threadLastError().c_str();
}

}  // extern "C"
