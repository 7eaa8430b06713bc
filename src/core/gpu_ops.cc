// A GPU communicator's operations (see gpu_ops.h).
#include "core/gpu_ops.h"

#include <mutex>

#include "common/log.h"
#include "core/op_plan.h"
#include "core/tree_conns.h"
#include "device/dtypes.h"
#include "device/executor.h"
#include "plan/tuner.h"

namespace collcomm::detail {

Status checkGpuOp(ccComm* comm, const Op& op) {
  const char* name = collName(op.kind);
  const int o = static_cast<int>(op.op);
  // A ccScalarDevice PreMulSum's scalar is read by the kernel: it must be memory the device reaches.
  if (collReduces(op.kind) && o >= ccNumOps) {
    const UserRedOp& u = comm->userOps[static_cast<size_t>(o - ccNumOps)];
    if (u.residence == ccScalarDevice)
      CC_CHECK(comm->gpu()->checkBuffer(u.scalarPtr, dtypeSize(op.dtype), name, "the PreMulSum op's scalar"));
  }
  size_t sendBytes = 0, recvBytes = 0;
  bufferSpans(comm, op, dtypeSize(op.dtype), &sendBytes, &recvBytes);
  CC_CHECK(comm->gpu()->checkBuffer(op.sendbuff, sendBytes, name, "sendbuff"));
  CC_CHECK(comm->gpu()->checkBuffer(op.recvbuff, recvBytes, name, "recvbuff"));
  return kOk;
}

Status runGpuOp(ccComm* comm, const Op& op) {
  const Plan plan = planOp(comm, op);
  notePlan(comm, plan);
  ExecColl coll = execCollOf(comm, op, plan);
  ExecOp exec;
  exec.name = collName(op.kind);
  exec.stream = op.stream;
  if (talksToEveryPeer(plan.algo, comm->nranks)) {  // over ExecColl::peers, connected on first use
    ExecFailure failure;
    ScopedDevice onDevice(comm->config.device);  // a GPU rank's FIFOs are made on its device
    const Status s = connectAllCollPeers(comm, Deadline::afterSeconds(comm->config.timeoutSeconds));
    if (!isOk(s)) return failOp(comm, s, failure);
    coll.peers = comm->peerConns.data();
  } else if (plan.algo == Algorithm::kTree && comm->nranks > 1) {  // over ExecColl::trees, connected on first use
    ExecFailure failure;
    ScopedDevice onDevice(comm->config.device);
    const Status s = connectTrees(comm, Deadline::afterSeconds(comm->config.timeoutSeconds));
    if (!isOk(s)) return failOp(comm, s, failure);
    coll.trees = comm->treeLinks.data();
  }
  exec.overNet = comm->usesNet;  // after connecting: the kernel keeps the proxy awake while it runs
  const Status s = comm->gpu()->run(coll, exec);
  if (!isOk(s)) (void)pollGpuFailure(comm);
  return s;
}

Status pollGpuFailure(ccComm* comm) {
  std::string message;
  const Status s = comm->gpu()->failure(comm->hostNames.data(), &message);
  if (isOk(s)) return kOk;
  std::lock_guard<std::mutex> lock(comm->asyncMu);
  int expected = ccSuccess;
  if (comm->asyncError.compare_exchange_strong(expected, static_cast<int>(s))) comm->asyncMessage = message;
  return s;
}

}  // namespace collcomm::detail
