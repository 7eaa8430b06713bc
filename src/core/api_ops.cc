// extern "C" shims for the operations and groups: pack the arguments, call enqueue.
#include "core/api_scope.h"
#include "core/enqueue.h"
#include "core/group.h"

using namespace collcomm::detail;

namespace {

ccResult_t callOp(ccComm* comm, const Op& op, ccStream_t stream) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s)) s = enqueue(comm, op, stream);
  return scope.finish(s);
}

}  // namespace

extern "C" {

ccResult_t ccAllReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op,
                       ccComm_t comm, ccStream_t stream) {
  return callOp(comm, {CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0}, stream);
}

ccResult_t ccBroadcast(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root,
                       ccComm_t comm, ccStream_t stream) {
  return callOp(comm, {CollKind::kBroadcast, sendbuff, recvbuff, count, datatype, ccSum, root}, stream);
}

ccResult_t ccReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op, int root,
                    ccComm_t comm, ccStream_t stream) {
  return callOp(comm, {CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root}, stream);
}

ccResult_t ccAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ccDataType_t datatype, ccComm_t comm,
                       ccStream_t stream) {
  return callOp(comm, {CollKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ccSum, 0}, stream);
}

ccResult_t ccReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ccDataType_t datatype, ccRedOp_t op,
                           ccComm_t comm, ccStream_t stream) {
  return callOp(comm, {CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0}, stream);
}

ccResult_t ccAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccComm_t comm,
                      ccStream_t stream) {
  return callOp(comm, {CollKind::kAlltoAll, sendbuff, recvbuff, count, datatype, ccSum, 0}, stream);
}

ccResult_t ccGather(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                    ccStream_t stream) {
  return callOp(comm, {CollKind::kGather, sendbuff, recvbuff, count, datatype, ccSum, root}, stream);
}

ccResult_t ccScatter(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                     ccStream_t stream) {
  return callOp(comm, {CollKind::kScatter, sendbuff, recvbuff, count, datatype, ccSum, root}, stream);
}

ccResult_t ccSend(const void* sendbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm,
                  ccStream_t stream) {
  return callOp(comm, {CollKind::kSend, sendbuff, nullptr, count, datatype, ccSum, peer}, stream);
}

ccResult_t ccRecv(void* recvbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm, ccStream_t stream) {
  return callOp(comm, {CollKind::kRecv, nullptr, recvbuff, count, datatype, ccSum, peer}, stream);
}

ccResult_t ccGroupStart(void) {
  clearThreadLastError();
  return toResult(groupStart());
}

ccResult_t ccGroupEnd(void) {
  clearThreadLastError();
  return toResult(groupEnd());
}

}  // extern "C"
