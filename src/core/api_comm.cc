// extern "C" shims for communicator lifecycle, queries, errors and version.
#include <chrono>
#include <thread>
#include <vector>

#include "common/asymmetric_fence.h"
#include "core/api_scope.h"
#include "core/enqueue.h"
#include "core/group.h"
#include "core/init.h"
#include "core/split.h"

using namespace collcomm::detail;

namespace {

Status initRank(ccComm** out, int nranks, const ccUniqueId& commId, int rank, const ccConfig_t* config) {
  if (out == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommInitRank: comm (the output pointer) is NULL");
  CommConfig cfg;
  CC_CHECK(resolveConfig(config, &cfg));
  UniqueIdData id{};
  CC_CHECK(decodeUniqueId(commId, &id));
  if (groupDepth() > 0) {
    *out = nullptr;
    groupDefer([=] { return commInit(out, nranks, id, rank, cfg); });
    return kOk;
  }
  return commInit(out, nranks, id, rank, cfg);
}

Status initAll(ccComm** comms, int ndev, const int* devlist) {
  if (comms == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommInitAll: comms is NULL");
  if (ndev < 1) return CC_ERROR(Status::kInvalidArgument, "ccCommInitAll: ndev must be at least 1, not %d", ndev);
  UniqueIdData id{};
  CC_CHECK(createUniqueId(&id));
  std::vector<CommConfig> cfgs(ndev);
  for (int i = 0; i < ndev; ++i) {
    CC_CHECK(resolveConfig(nullptr, &cfgs[i]));
    if (devlist != nullptr && devlist[i] != CC_DEVICE_HOST && devlist[i] < 0)
      return CC_ERROR(Status::kInvalidArgument, "ccCommInitAll: devlist[%d] = %d is not a device", i, devlist[i]);
  }
  std::vector<ccComm*> made(ndev, nullptr);
  std::vector<Status> status(ndev, kOk);
  std::vector<std::string> messages(ndev);
  auto one = [&](int i) {
    clearThreadLastError();
    status[i] = commInit(&made[i], ndev, id, i, cfgs[i]);
    messages[i] = threadLastError();
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < ndev; ++i) threads.emplace_back(one, i);
  one(0);
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (!isOk(status[i])) {
      for (ccComm* c : made) commFree(c);
      setThreadLastError(messages[i]);
      return status[i];
    }
  }
  for (int i = 0; i < ndev; ++i) comms[i] = made[i];
  return kOk;
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
      *newcomm = nullptr;
      groupDefer([=] { return commSplit(comm, color, key, cfg, newcomm); });
    } else {
      s = commSplit(comm, color, key, cfg, newcomm);
    }
  }
  return scope.finish(s);
}

ccResult_t ccCommFinalize(ccComm_t comm) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  // Host operations complete before their calls return: nothing is outstanding to flush.
  if (isOk(s)) comm->finalized = true;
  return scope.finish(s);
}

ccResult_t ccCommDestroy(ccComm_t comm) {
  clearThreadLastError();
  if (comm == nullptr) return ccSuccess;
  Status s = checkComm(comm);
  if (!isOk(s)) return toResult(s);
  groupForget(comm);
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
  comm->abortFlag.store(1, std::memory_order_release);
  comm->leaveConnections(comm->rank, kGoneAborted);
  if (comm->bootstrap) comm->bootstrap->abort();
  groupForget(comm);
  // Waits in flight see the flag within milliseconds; past the limit the memory is kept (leaked)
  // rather than pulled from under a thread still inside.
  if (waitIdle(comm, 0, std::chrono::milliseconds(900))) commFree(comm);
  else comm->magic = kCommDeadMagic;
  return ccSuccess;
}

ccResult_t ccCommGetAsyncError(ccComm_t comm, ccResult_t* asyncError) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s) && asyncError == nullptr) s = CC_ERROR(Status::kInvalidArgument, "ccCommGetAsyncError: asyncError is NULL");
  if (isOk(s)) *asyncError = static_cast<ccResult_t>(comm->asyncError.load());
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
