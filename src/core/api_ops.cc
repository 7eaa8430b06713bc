// extern "C" shims for the operations and groups: pack the arguments, call enqueue.
#include "core/api_scope.h"
#include "core/enqueue.h"
#include "core/group.h"

using namespace collcomm::detail;

namespace {

// dtype and op arrive as raw bits: see enumBits.
ccResult_t callOp(ccComm* comm, CollKind kind, const void* sendbuff, void* recvbuff, size_t count, int dtype, int op,
                  int root, ccStream_t stream) {
  OpScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s)) s = checkEnumArgs(kind, dtype, op);
  if (isOk(s))
    s = enqueue(comm,
                Op{kind, sendbuff, recvbuff, count, static_cast<ccDataType_t>(dtype), static_cast<ccRedOp_t>(op), root,
                   stream},
                stream);
  return scope.finish(s);
}

}  // namespace

extern "C" {

ccResult_t ccAllReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op,
                       ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kAllReduce, sendbuff, recvbuff, count, enumBits(datatype), enumBits(op), 0, stream);
}

ccResult_t ccBroadcast(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root,
                       ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kBroadcast, sendbuff, recvbuff, count, enumBits(datatype), ccSum, root, stream);
}

ccResult_t ccBcast(void* buff, size_t count, ccDataType_t datatype, int root, ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kBroadcast, buff, buff, count, enumBits(datatype), ccSum, root, stream);
}

ccResult_t ccReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op, int root,
                    ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kReduce, sendbuff, recvbuff, count, enumBits(datatype), enumBits(op), root, stream);
}

ccResult_t ccAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ccDataType_t datatype, ccComm_t comm,
                       ccStream_t stream) {
  return callOp(comm, CollKind::kAllGather, sendbuff, recvbuff, sendcount, enumBits(datatype), ccSum, 0, stream);
}

ccResult_t ccReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ccDataType_t datatype, ccRedOp_t op,
                           ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, enumBits(datatype), enumBits(op), 0, stream);
}

ccResult_t ccAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccComm_t comm,
                      ccStream_t stream) {
  return callOp(comm, CollKind::kAlltoAll, sendbuff, recvbuff, count, enumBits(datatype), ccSum, 0, stream);
}

ccResult_t ccGather(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                    ccStream_t stream) {
  return callOp(comm, CollKind::kGather, sendbuff, recvbuff, count, enumBits(datatype), ccSum, root, stream);
}

ccResult_t ccScatter(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                     ccStream_t stream) {
  return callOp(comm, CollKind::kScatter, sendbuff, recvbuff, count, enumBits(datatype), ccSum, root, stream);
}

ccResult_t ccSend(const void* sendbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm,
                  ccStream_t stream) {
  return callOp(comm, CollKind::kSend, sendbuff, nullptr, count, enumBits(datatype), ccSum, peer, stream);
}

ccResult_t ccRecv(void* recvbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm, ccStream_t stream) {
  return callOp(comm, CollKind::kRecv, nullptr, recvbuff, count, enumBits(datatype), ccSum, peer, stream);
}

ccResult_t ccGroupStart(void) {
  clearThreadLastError();
  return toResult(groupStart());
}

ccResult_t ccGroupEnd(void) {
  clearThreadLastError();
  return toResult(groupEnd());
}

ccResult_t ccGroupSimulateEnd(ccSimInfo_t* simInfo) {
  clearThreadLastError();
  if (simInfo == nullptr || simInfo->magic != CC_SIM_INFO_MAGIC || simInfo->size < sizeof(ccSimInfo_t))
    return toResult(CC_ERROR(Status::kInvalidArgument,
                             "ccGroupSimulateEnd: simInfo is %s; initialise it with CC_SIM_INFO_INITIALIZER",
                             simInfo == nullptr ? "NULL" : "not from CC_SIM_INFO_INITIALIZER"));
  double us = 0;
  const Status s = groupSimulateEnd(&us);
  if (isOk(s)) simInfo->estimatedTime = static_cast<float>(us);
  return toResult(s);
}

}  // extern "C"
