// A GPU communicator's operations (see gpu_ops.h).
#include "core/gpu_ops.h"

#include <cstdint>
#include <mutex>
#include <vector>

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
    if (u.residence == ccScalarDevice) {
      CC_CHECK(comm->gpu()->checkBuffer(u.scalarPtr, dtypeSize(op.dtype), name, "the PreMulSum op's scalar"));
      // The kernels load it as one word of the type's size: a misaligned one would fault the context.
      if (reinterpret_cast<uintptr_t>(u.scalarPtr) % dtypeSize(op.dtype) != 0)
        return CC_ERROR(Status::kInvalidArgument,
                        "%s: the PreMulSum op's scalar at %p is not aligned to its type's %zu bytes (%s)", name,
                        u.scalarPtr, dtypeSize(op.dtype), dtypeName(op.dtype));
    }
  }
  size_t sendBytes = 0, recvBytes = 0;
  bufferSpans(comm, op, dtypeSize(op.dtype), &sendBytes, &recvBytes);
  CC_CHECK(comm->gpu()->checkBuffer(op.sendbuff, sendBytes, name, "sendbuff"));
  CC_CHECK(comm->gpu()->checkBuffer(op.recvbuff, recvBytes, name, "recvbuff"));
  return kOk;
}

namespace {

// Whether the plan's algorithm runs over connections core makes on first use (per-peer or tree).
bool connectsFirst(const ccComm* comm, Algorithm algo) {
  return talksToEveryPeer(algo, comm->nranks) || (algo == Algorithm::kTree && comm->nranks > 1);
}

// A launch refused on the host: an earlier kernel's failure (pollGpuFailure records it), or, where no
// kernel failed, one of this launch's own (the fused launch's rendezvous timed out or was aborted,
// ranks called different collectives, scratch that cannot grow under capture), after which the
// peers' kernels may wait for this rank's in vain: for the codes failOp acts on (timeout, remote
// error, invalid usage, internal error) they are told it left and the communicator is broken, as a
// host operation's failure does; a CUDA error or a bad argument leaves both as they are.
Status launchRefused(ccComm* comm, Status s) {
  if (!isOk(pollGpuFailure(comm))) return s;
  ExecFailure failure;
  return failOp(comm, s, failure);
}

Status runPlanned(ccComm* comm, const Op& op, const Plan& plan) {
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
  return isOk(s) ? s : launchRefused(comm, s);
}

// ops[0..n), planned as plans[0..n), on one stream, none connecting first: to the executor at once.
Status runGroupPlanned(ccComm* comm, const Op* ops, const Plan* plans, size_t n) {
  std::vector<ExecColl> colls;
  colls.reserve(n);
  for (size_t i = 0; i < n; ++i) colls.push_back(execCollOf(comm, ops[i], plans[i]));
  ExecOp exec;
  exec.name = "a group's collectives";
  exec.stream = ops[0].stream;
  exec.overNet = comm->usesNet;
  const Status s = comm->gpu()->runGroup(colls.data(), n, exec);
  return isOk(s) ? s : launchRefused(comm, s);
}

}  // namespace

Status runGpuOp(ccComm* comm, const Op& op) {
  const Plan plan = planOp(comm, op);
  notePlan(comm, plan);
  return runPlanned(comm, op, plan);
}

Status runGpuOps(ccComm* comm, const Op* ops, size_t n) {
  std::vector<Plan> plans;
  plans.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    plans.push_back(planOp(comm, ops[i]));
    notePlan(comm, plans.back());
  }
  for (size_t i = 0; i < n;) {
    if (connectsFirst(comm, plans[i].algo)) {
      CC_CHECK(runPlanned(comm, ops[i], plans[i]));
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < n && ops[end].stream == ops[i].stream && !connectsFirst(comm, plans[end].algo)) ++end;
    CC_CHECK(end - i == 1 ? runPlanned(comm, ops[i], plans[i])
                          : runGroupPlanned(comm, ops + i, plans.data() + i, end - i));
    i = end;
  }
  return kOk;
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
