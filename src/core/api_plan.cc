// ccCommDescribePlan: a plan as JSON, made by the same planOp the operations call (op_plan.h).
#include <strings.h>

#include <cstring>
#include <string>

#include "collcomm.h"
#include "core/api_scope.h"
#include "core/async.h"
#include "core/enqueue.h"
#include "core/op_plan.h"
#include "device/dtypes.h"

using namespace collcomm::detail;

namespace {

// The collectives that have a plan: those planCollective/planGpuCollective decide for.
constexpr CollKind kPlanned[] = {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllGather,
                                 CollKind::kReduceScatter};

Status describePlan(ccComm* comm, const char* collective, size_t count, int dtype, int root, char* json,
                    size_t jsonBytes, size_t* needed) {
  constexpr const char* kCall = "ccCommDescribePlan";
  CC_CHECK(checkComm(comm));
  CC_CHECK(checkNoWorkInProgress(comm, kCall));
  if (comm->channels.empty())  // made in a group, whose ccGroupEnd has not run yet
    return CC_ERROR(Status::kInvalidUsage,
                    "%s: rank %d's communicator is not initialised yet (made in a group: call "
                    "ccGroupEnd first)",
                    kCall, comm->rank);
  if (comm->asyncError.load() != ccSuccess)
    return CC_ERROR(Status::kInvalidUsage,
                    "%s: rank %d's communicator has failed; it is only good for "
                    "ccCommDestroy or ccCommAbort",
                    kCall, comm->rank);
  if (collective == nullptr) return CC_ERROR(Status::kInvalidArgument, "%s: collective is NULL", kCall);
  const CollKind* kind = nullptr;
  for (const CollKind& k : kPlanned)
    if (strcasecmp(collective, collName(k)) == 0) kind = &k;
  if (kind == nullptr)
    return CC_ERROR(Status::kInvalidArgument,
                    "%s: \"%s\" is not a collective with a plan (AllReduce, Broadcast, Reduce, AllGather, "
                    "ReduceScatter; point-to-point kinds have none)",
                    kCall, collective);
  if (dtype < 0 || dtype >= ccNumTypes)
    return CC_ERROR(Status::kInvalidArgument, "%s: datatype %d is not a ccDataType_t (0..%d)", kCall, dtype,
                    ccNumTypes - 1);
  const bool rooted = *kind == CollKind::kBroadcast || *kind == CollKind::kReduce;
  if (rooted && (root < 0 || root >= comm->nranks))
    return CC_ERROR(Status::kInvalidArgument, "%s: root %d is out of range for a communicator of %d ranks", kCall, root,
                    comm->nranks);
  const size_t elem = dtypeSize(static_cast<ccDataType_t>(dtype));
  size_t total;
  if (__builtin_mul_overflow(count, elem * static_cast<size_t>(comm->nranks), &total) || total > SIZE_MAX / 2)
    return CC_ERROR(Status::kInvalidArgument, "%s: count %zu is too large", kCall, count);
  if (json == nullptr && jsonBytes != 0)
    return CC_ERROR(Status::kInvalidArgument, "%s: json is NULL but jsonBytes is %zu", kCall, jsonBytes);
  if (json == nullptr && needed == nullptr)
    return CC_ERROR(Status::kInvalidArgument, "%s: json and needed are both NULL: nothing to write", kCall);
  const std::string text =
      formatPlanJson(planOp(comm, *kind, count, static_cast<ccDataType_t>(dtype), rooted ? root : -1));
  if (needed != nullptr) *needed = text.size() + 1;
  if (json == nullptr) return kOk;
  if (jsonBytes < text.size() + 1)
    return CC_ERROR(Status::kInvalidArgument,
                    "%s: jsonBytes %zu is too small: the plan takes %zu bytes with its NUL (also in *needed)", kCall,
                    jsonBytes, text.size() + 1);
  memcpy(json, text.c_str(), text.size() + 1);
  return kOk;
}

}  // namespace

extern "C" ccResult_t ccCommDescribePlan(ccComm_t comm, const char* collective, size_t count, ccDataType_t datatype,
                                         int root, char* json, size_t jsonBytes, size_t* needed) {
  ApiScope scope(comm);
  return scope.finish(describePlan(comm, collective, count, enumBits(datatype), root, json, jsonBytes, needed));
}
