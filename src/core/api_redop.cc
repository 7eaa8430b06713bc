// extern "C" shims for user-defined reductions (PreMulSum).
#include <cstring>

#include "core/api_scope.h"
#include "core/async.h"
#include "core/enqueue.h"
#include "device/dtypes.h"

using namespace collcomm::detail;

namespace {

Status createPreMulSum(ccComm* comm, ccRedOp_t* op, void* scalar, ccDataType_t dtype, ccScalarResidence_t residence) {
  if (op == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccRedOpCreatePreMulSum: op is NULL");
  if (scalar == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccRedOpCreatePreMulSum: scalar is NULL");
  if (enumBits(dtype) < 0 || enumBits(dtype) >= ccNumTypes)
    return CC_ERROR(Status::kInvalidArgument, "ccRedOpCreatePreMulSum: datatype %d is not a ccDataType_t",
                    enumBits(dtype));
  if (enumBits(residence) != ccScalarDevice && enumBits(residence) != ccScalarHostImmediate)
    return CC_ERROR(Status::kInvalidArgument, "ccRedOpCreatePreMulSum: residence %d is not a ccScalarResidence_t",
                    enumBits(residence));
  UserRedOp u;
  u.inUse = true;
  u.dtype = dtype;
  u.residence = residence;
  // On a host communicator "device" memory is host memory: the scalar is read when each
  // operation runs, as a GPU kernel would read it.
  if (residence == ccScalarHostImmediate) memcpy(&u.scalarBits, scalar, dtypeSize(dtype));
  else u.scalarPtr = scalar;
  size_t slot = 0;
  while (slot < comm->userOps.size() && comm->userOps[slot].inUse) ++slot;
  if (slot == comm->userOps.size()) comm->userOps.push_back(u);
  else comm->userOps[slot] = u;
  *op = static_cast<ccRedOp_t>(ccNumOps + static_cast<int>(slot));
  return kOk;
}

Status destroyOp(ccComm* comm, ccRedOp_t op) {
  const int o = enumBits(op);
  if (o < ccNumOps)
    return CC_ERROR(Status::kInvalidArgument, "ccRedOpDestroy: op %d is built in and cannot be destroyed", o);
  const size_t idx = static_cast<size_t>(o - ccNumOps);
  if (idx >= comm->userOps.size() || !comm->userOps[idx].inUse)
    return CC_ERROR(Status::kInvalidArgument, "ccRedOpDestroy: op %d is not a live op of this communicator", o);
  comm->userOps[idx].inUse = false;
  return kOk;
}

}  // namespace

extern "C" {

ccResult_t ccRedOpCreatePreMulSum(ccRedOp_t* op, void* scalar, ccDataType_t datatype, ccScalarResidence_t residence,
                                  ccComm_t comm) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  // Queued operations read the communicator's ops as they run.
  if (isOk(s)) s = checkNoWorkInProgress(comm, "ccRedOpCreatePreMulSum");
  if (isOk(s)) s = createPreMulSum(comm, op, scalar, datatype, residence);
  return scope.finish(s);
}

ccResult_t ccRedOpDestroy(ccRedOp_t op, ccComm_t comm) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s)) s = checkNoWorkInProgress(comm, "ccRedOpDestroy");
  if (isOk(s)) s = destroyOp(comm, op);
  return scope.finish(s);
}

}  // extern "C"
