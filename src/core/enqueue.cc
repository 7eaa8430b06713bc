// Argument checking and execution of queued operations.
#include "core/enqueue.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>

#include "common/log.h"
#include "core/async.h"
#include "core/gpu_ops.h"
#include "core/group.h"
#include "core/op_plan.h"
#include "core/p2p_rounds.h"
#include "core/tree_conns.h"
#include "device/dtypes.h"
#include "device/executor.h"
#include "device/op_arg.h"
#include "proxy/proxy.h"
#include "transport/connect.h"

namespace collcomm::detail {
namespace {

constexpr uint64_t kP2pTagBase = 0x5032500000000000ull;      // "P2P"
constexpr uint64_t kOneShotTagBase = 0x3153484f54000000ull;  // "1SHOT"

bool rangesOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes != 0 && bBytes != 0 && x < y + bBytes && y < x + aBytes;
}

// In place as NCCL defines it: the send buffer is this rank's slice of the receive buffer (or the
// reverse for ReduceScatter/Scatter).
bool isInPlace(const ccComm* comm, const Op& op, size_t elem) {
  const char* s = static_cast<const char*>(op.sendbuff);
  const char* r = static_cast<const char*>(op.recvbuff);
  const size_t slice = op.count * elem * static_cast<size_t>(comm->rank);
  switch (op.kind) {
    case CollKind::kAllGather:
    case CollKind::kGather: return s == r + slice;
    case CollKind::kReduceScatter:
    case CollKind::kScatter: return r == s + slice;
    default: return s == r;
  }
}

Status checkOp(ccComm* comm, const Op& op, ccStream_t stream) {
  const char* name = collName(op.kind);
  if (stream != nullptr && !comm->gpu())
    return CC_ERROR(Status::kInvalidArgument,
                    "%s: stream must be NULL on a host communicator (rank %d); host calls complete before returning",
                    name, comm->rank);
  if (isPerThreadStream(stream) && comm->config.blocking == 0)
    return CC_ERROR(Status::kInvalidUsage,
                    "%s: rank %d's communicator is non-blocking, so its operations are launched by its own worker "
                    "thread, where cudaStreamPerThread would name that thread's stream, not the caller's: pass a "
                    "stream made with cudaStreamCreate",
                    name, comm->rank);
  if (collReduces(op.kind)) {
    const int o = static_cast<int>(op.op);
    if (o >= ccNumOps) {
      const size_t idx = static_cast<size_t>(o - ccNumOps);
      if (idx >= comm->userOps.size() || !comm->userOps[idx].inUse)
        return CC_ERROR(Status::kInvalidArgument,
                        "%s: reduction op %d is neither built in nor a live ccRedOpCreatePreMulSum op of this "
                        "communicator",
                        name, o);
      if (comm->userOps[idx].dtype != op.dtype)
        return CC_ERROR(Status::kInvalidArgument, "%s: op %d was created for %s but the call uses %s", name, o,
                        dtypeName(comm->userOps[idx].dtype), dtypeName(op.dtype));
    }
  }
  const bool rooted = op.kind == CollKind::kBroadcast || op.kind == CollKind::kReduce ||
                      op.kind == CollKind::kGather || op.kind == CollKind::kScatter;
  const bool peered = op.kind == CollKind::kSend || op.kind == CollKind::kRecv;
  if ((rooted || peered) && (op.root < 0 || op.root >= comm->nranks))
    return CC_ERROR(Status::kInvalidArgument, "%s: %s %d is out of range for a communicator of %d ranks", name,
                    peered ? "peer" : "root", op.root, comm->nranks);
  const size_t elem = dtypeSize(op.dtype);
  size_t total;  // the largest span any rank's buffer has; checked by multiplication, no division
  if (__builtin_mul_overflow(op.count, elem * static_cast<size_t>(comm->nranks), &total) || total > SIZE_MAX / 2)
    return CC_ERROR(Status::kInvalidArgument, "%s: count %zu is too large", name, op.count);
  size_t sendBytes = 0, recvBytes = 0;
  bufferSpans(comm, op, elem, &sendBytes, &recvBytes);
  if (sendBytes != 0 && op.sendbuff == nullptr)
    return CC_ERROR(Status::kInvalidArgument, "%s: sendbuff is NULL on rank %d but %zu bytes are to be sent", name,
                    comm->rank, sendBytes);
  if (recvBytes != 0 && op.recvbuff == nullptr)
    return CC_ERROR(Status::kInvalidArgument, "%s: recvbuff is NULL on rank %d but %zu bytes are to be received",
                    name, comm->rank, recvBytes);
  if (!peered && !isInPlace(comm, op, elem) && rangesOverlap(op.sendbuff, sendBytes, op.recvbuff, recvBytes))
    return CC_ERROR(Status::kInvalidArgument,
                    "%s: sendbuff and recvbuff overlap on rank %d without being in place (in place means %s)", name,
                    comm->rank,
                    op.kind == CollKind::kAllGather || op.kind == CollKind::kGather
                        ? "sendbuff == recvbuff + rank*count"
                        : (op.kind == CollKind::kReduceScatter || op.kind == CollKind::kScatter
                               ? "recvbuff == sendbuff + rank*count"
                               : "sendbuff == recvbuff"));
  if (comm->gpu()) CC_CHECK(checkGpuOp(comm, op));
  return kOk;
}

}  // namespace

void bufferSpans(const ccComm* comm, const Op& op, size_t elem, size_t* sendBytes, size_t* recvBytes) {
  const size_t n = static_cast<size_t>(comm->nranks), c = op.count * elem;
  const bool isRoot = op.root == comm->rank;
  switch (op.kind) {
    case CollKind::kAllReduce: *sendBytes = c; *recvBytes = c; break;
    case CollKind::kBroadcast: *sendBytes = isRoot ? c : 0; *recvBytes = c; break;
    case CollKind::kReduce: *sendBytes = c; *recvBytes = isRoot ? c : 0; break;
    case CollKind::kAllGather: *sendBytes = c; *recvBytes = c * n; break;
    case CollKind::kReduceScatter: *sendBytes = c * n; *recvBytes = c; break;
    case CollKind::kAlltoAll: *sendBytes = c * n; *recvBytes = c * n; break;
    case CollKind::kGather: *sendBytes = c; *recvBytes = isRoot ? c * n : 0; break;
    case CollKind::kScatter: *sendBytes = isRoot ? c * n : 0; *recvBytes = c; break;
    case CollKind::kSend: *sendBytes = c; *recvBytes = 0; break;
    case CollKind::kRecv: *sendBytes = 0; *recvBytes = c; break;
  }
}

RedOpSpec opSpec(const ccComm* comm, const Op& op) {
  const int o = static_cast<int>(op.op);
  if (o < ccNumOps) return makeOpArg(op.op, op.dtype, comm->nranks);
  const UserRedOp& u = comm->userOps[static_cast<size_t>(o - ccNumOps)];
  if (u.residence == ccScalarHostImmediate) return RedOpSpec{RedOpKind::kPreMulSum, u.scalarBits};
  // ccScalarDevice: a GPU communicator's kernel reads the scalar when it runs; a host
  // communicator's operation runs now, and reads it now.
  if (comm->gpu()) return RedOpSpec{RedOpKind::kPreMulSum, 0, u.scalarPtr};
  return makePreMulSumOpArg(op.dtype, u.scalarPtr);
}

Status failOp(ccComm* comm, Status s, const ExecFailure& failure) {
  // The peers may be mid-operation with this rank: tell them it will not come (and whose fault it
  // is), and remember the communicator is no longer usable.
  if (s == Status::kRemoteError || s == Status::kTimeout || s == Status::kInvalidUsage ||
      s == Status::kInternalError) {
    comm->leaveConnections(failure.culprit >= 0 ? failure.culprit : comm->rank, failure.reason);
    int expected = ccSuccess;
    comm->asyncError.compare_exchange_strong(expected, static_cast<int>(s));
  }
  return s;
}

namespace {

Status runCollective(ccComm* comm, const Op& op) {
  if (comm->gpu()) return runGpuOp(comm, op);
  const Plan plan = planOp(comm, op);
  notePlan(comm, plan);
  ExecColl coll = execCollOf(comm, op, plan);
  ExecFailure failure;
  ExecOp exec;
  exec.name = collName(op.kind);
  exec.failure = &failure;
  exec.overNet = comm->usesNet;
  if (talksToEveryPeer(plan.algo, comm->nranks)) {  // over ExecColl::peers
    exec.deadline = Deadline::afterSeconds(comm->config.timeoutSeconds);  // connecting counts too
    const Status s = connectAllCollPeers(comm, exec.deadline);
    if (!isOk(s)) return failOp(comm, s, failure);
    coll.peers = comm->peerConns.data();
    return failOp(comm, comm->executor->run(coll, exec), failure);
  }
  if (plan.algo == Algorithm::kTree) {  // over ExecColl::trees, connected on first use
    exec.deadline = Deadline::afterSeconds(comm->config.timeoutSeconds);  // connecting counts too
    const Status s = connectTrees(comm, exec.deadline);
    if (!isOk(s)) return failOp(comm, s, failure);
    coll.trees = comm->treeLinks.data();
    return failOp(comm, comm->executor->run(coll, exec), failure);
  }
  // Far, whether this operation's steps stream is learned from the operations' times
  // (plan/step_stream_choice.h), with the executor's verdict on the distance as its input; a clock
  // read costs tens of ns, so only the operations it counts are timed.
  bool timed = false;
  if (plan.streamSteps && !plan.streamStepsAlways) {
    coll.streamSteps =
        comm->stepStreamChoice.choose(op.kind, plan.bytes, comm->executor->receiversFindFar(plan.nChannels));
    timed = comm->stepStreamChoice.wantsTime();
  }
  const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const Status s = comm->executor->run(coll, exec);
  if (timed && s == kOk)
    comm->stepStreamChoice.record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
  return failOp(comm, s, failure);
}

// Expands one point-to-point-shaped call into transfers.
void expandP2p(const ccComm* comm, const Op& op, std::vector<ExecTransfer>* out) {
  const size_t bytes = op.count * dtypeSize(op.dtype);
  auto add = [&](bool isSend, int peer, const void* buf) {
    out->push_back(ExecTransfer{isSend, peer, const_cast<void*>(buf), bytes, nullptr, nullptr, 0});
  };
  const char* s = static_cast<const char*>(op.sendbuff);
  char* r = static_cast<char*>(op.recvbuff);
  switch (op.kind) {
    case CollKind::kSend: add(true, op.root, s); break;
    case CollKind::kRecv: add(false, op.root, r); break;
    case CollKind::kAlltoAll:
      for (int p = 0; p < comm->nranks; ++p) {
        add(true, p, s + bytes * p);
        add(false, p, r + bytes * p);
      }
      break;
    case CollKind::kGather:
      add(true, op.root, s);
      if (comm->rank == op.root)
        for (int p = 0; p < comm->nranks; ++p) add(false, p, r + bytes * p);
      break;
    case CollKind::kScatter:
      if (comm->rank == op.root)
        for (int p = 0; p < comm->nranks; ++p) add(true, p, s + bytes * p);
      add(false, op.root, r);
      break;
    default: break;
  }
}

// Connects, in step with the peers, the connections of `peers` (comm->p2p for the user's
// transfers, comm->collPeers for collectives') to the ranks that wantSend/wantRecv name and that
// are not connected yet.
Status connectPeerSet(ccComm* comm, std::vector<P2pPeer>& peers, const std::vector<bool>& wantSend,
                      const std::vector<bool>& wantRecv, uint64_t tag, const FifoLayout& layout,
                      const Deadline& deadline) {
  std::vector<ConnectRequest> requests;
  std::vector<const char*> names(2 * comm->nranks);
  for (int peer = 0; peer < comm->nranks; ++peer) {
    P2pPeer& p = peers[peer];
    if (wantSend[peer] && !p.sendReady)
      requests.push_back({peer, true, tag, layout, &p.send, nullptr, &p.sendMem, &names[2 * peer]});
    if (wantRecv[peer] && !p.recvReady)
      requests.push_back({peer, false, tag, layout, nullptr, &p.recv, &p.recvMem, &names[2 * peer + 1]});
  }
  if (requests.empty()) return kOk;
  CC_CHECK(connectPeers(*comm->bootstrap, comm->peers, comm->rank, comm->connSetup(deadline), requests));
  for (const ConnectRequest& r : requests) {
    (r.isSend ? peers[r.peer].sendReady : peers[r.peer].recvReady) = true;
    comm->usesNet |= *r.transportName == kNetTransportName;
    CC_INFO(kSubsysP2p, "p2p: rank %d %s rank %d via %s", comm->rank, r.isSend ? "->" : "<-", r.peer,
            *r.transportName);
  }
  return kOk;
}

// Connects every point-to-point connection the batch needs and points its transfers at them.
Status connectP2p(ccComm* comm, ExecTransfer* ops, size_t nOps, const Deadline& deadline) {
  std::vector<bool> wantSend(comm->nranks), wantRecv(comm->nranks);
  for (size_t i = 0; i < nOps; ++i) {
    const ExecTransfer& op = ops[i];
    if (op.peer == comm->rank || op.bytes == 0) continue;
    (op.isSend ? wantSend : wantRecv)[op.peer] = true;
  }
  CC_CHECK(connectPeerSet(comm, comm->p2p, wantSend, wantRecv, kP2pTagBase, comm->fifoSizes.p2p, deadline));
  for (size_t i = 0; i < nOps; ++i) {
    ExecTransfer& op = ops[i];
    if (op.peer == comm->rank) continue;
    op.send = &comm->p2p[op.peer].send;
    op.recv = &comm->p2p[op.peer].recv;
  }
  return kOk;
}

}  // namespace

Status connectAllCollPeers(ccComm* comm, const Deadline& deadline) {
  if (comm->nranks <= 2 || comm->collPeersConnected) return kOk;
  std::vector<bool> want(comm->nranks, true);
  want[comm->rank] = false;
  CC_CHECK(connectPeerSet(comm, comm->collPeers, want, want, kOneShotTagBase, comm->fifoSizes.oneShot, deadline));
  comm->collPeersConnected = true;
  return kOk;
}

namespace {

Status runP2pBatch(ccComm* comm, const Op* ops, size_t begin, size_t end) {
  std::vector<ExecTransfer> transfers;
  for (size_t i = begin; i < end; ++i) expandP2p(comm, ops[i], &transfers);
  ExecFailure failure;
  ExecOp exec;
  exec.name = end - begin == 1 ? collName(ops[begin].kind) : "send/recv group";
  exec.failure = &failure;
  // A GPU communicator runs the batch as one kernel on one stream (joining several streams is not
  // implemented), and makes its connections' FIFOs on its own device.
  exec.stream = ops[begin].stream;
  for (size_t i = begin + 1; i < end; ++i)
    if (ops[i].stream != exec.stream)
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d: the point-to-point operations of one group run as one kernel on one stream "
                      "on a GPU communicator, but they name different streams (%p and %p)",
                      exec.name, comm->rank, static_cast<void*>(exec.stream), static_cast<void*>(ops[i].stream));
  ScopedDevice onDevice(comm->config.device);
  exec.overNet = comm->usesNet;  // as before connecting: a batch that makes the first NET connection
  exec.deadline = Deadline::afterSeconds(comm->config.timeoutSeconds);  // connecting counts too
  Status s = connectP2p(comm, transfers.data(), transfers.size(), exec.deadline);
  // A GPU kernel keeps the proxy awake while it runs, so it must know of the NET connections just made.
  if (comm->gpu()) exec.overNet = comm->usesNet;
  const size_t perRun = comm->executor->maxTransfersPerRun();
  if (!isOk(s) || transfers.size() <= perRun) {
    if (isOk(s)) s = comm->executor->runP2p(transfers.data(), transfers.size(), exec);
    return failOp(comm, s, failure);
  }
  // In rounds that each fit a run (core/p2p_rounds.h). Connected, each round's waits have the
  // timeout of their own.
  exec.deadline = Deadline();
  for (std::vector<ExecTransfer>& round : p2pRounds(transfers, comm->rank, comm->nranks, perRun)) {
    s = comm->executor->runP2p(round.data(), round.size(), exec);
    if (!isOk(s)) break;
  }
  return failOp(comm, s, failure);
}

}  // namespace

bool opsNeedConnecting(ccComm* comm, const Op* ops, size_t nOps) {
  std::vector<ExecTransfer> transfers;
  for (size_t i = 0; i < nOps; ++i) {
    if (isP2pKind(ops[i].kind)) expandP2p(comm, ops[i], &transfers);
    else if ((!comm->collPeersConnected && comm->nranks > 2) || (!comm->treesConnected && comm->nranks > 1)) {
      const Algorithm algo = planOp(comm, ops[i]).algo;
      if ((!comm->collPeersConnected && comm->nranks > 2 && talksToEveryPeer(algo, comm->nranks)) ||
          (!comm->treesConnected && algo == Algorithm::kTree))
        return true;
    }
  }
  for (const ExecTransfer& t : transfers) {
    if (t.peer == comm->rank || t.bytes == 0) continue;
    const P2pPeer& p = comm->p2p[t.peer];
    if (!(t.isSend ? p.sendReady : p.recvReady)) return true;
  }
  return false;
}

Status checkEnumArgs(CollKind kind, int dtype, int op) {
  const char* name = collName(kind);
  if (dtype < 0 || dtype >= ccNumTypes)
    return CC_ERROR(Status::kInvalidArgument, "%s: datatype %d is not a ccDataType_t (0..%d)", name, dtype,
                    ccNumTypes - 1);
  if (collReduces(kind) && op < 0)
    return CC_ERROR(Status::kInvalidArgument, "%s: reduction op %d is not a ccRedOp_t", name, op);
  return kOk;
}

Status checkComm(const ccComm* comm) {
  if (comm == nullptr) return CC_ERROR(Status::kInvalidArgument, "comm is NULL");
  if (comm->magic != kCommMagic)
    return CC_ERROR(Status::kInvalidArgument, "comm %p is not a live communicator (destroyed, or never initialised)",
                    static_cast<const void*>(comm));
  return kOk;
}

Status enqueue(ccComm* comm, const Op& op, ccStream_t stream) {
  CC_CHECK(checkOp(comm, op, stream));
  if (comm->abortFlag.load() != 0)
    return CC_ERROR(Status::kInvalidUsage, "%s: the communicator of rank %d was %s", collName(op.kind), comm->rank,
                    comm->revoked.load()
                        ? "revoked (ccCommRevoke, or ccCommShrink with CC_SHRINK_ABORT); destroy or abort it"
                        : "aborted");
  if (comm->gpu()) (void)pollGpuFailure(comm);  // a kernel's failure breaks the communicator as a host one's does
  if (const int err = comm->asyncError.load(); err != ccSuccess)
    return CC_ERROR(static_cast<Status>(err),
                    "%s: the communicator of rank %d failed earlier (%s); destroy or abort it and make a new one",
                    collName(op.kind), comm->rank, ccGetErrorString(static_cast<ccResult_t>(err)));
  if (comm->finalized)
    return CC_ERROR(Status::kInvalidUsage, "%s: the communicator of rank %d was finalized; no operation may follow",
                    collName(op.kind), comm->rank);
  if (groupDepth() > 0) return groupQueue(comm, op);
  // Non-blocking: runs on the communicator's worker, after whatever is queued there (its init).
  if (comm->config.blocking == 0) return submitAsync(comm, [comm, op] { return runOps(comm, &op, 1); });
  // One collective with no proxy to wake needs none of runOps' batching.
  if (!isP2pKind(op.kind) && !comm->usesNet) return runCollective(comm, op);
  return runOps(comm, &op, 1);
}

Status runOps(ccComm* comm, const Op* ops, size_t nOps) {
  // Wakes this process's proxy thread for the operations' duration when NET is in use. A p2p
  // batch that makes its first NET connection wakes it itself (the proxy takes new clients).
  std::optional<ProxyActivity> activity;
  if (comm->usesNet) activity.emplace(&comm->netOpsRunning);
  Status s = kOk;
  for (size_t i = 0; i < nOps && isOk(s);) {
    if (isP2pKind(ops[i].kind)) {
      if (!activity) activity.emplace(&comm->netOpsRunning);  // the batch may connect over NET
      size_t j = i;
      while (j < nOps && isP2pKind(ops[j].kind)) ++j;
      s = runP2pBatch(comm, ops, i, j);
      i = j;
    } else if (comm->gpu()) {  // a run of collectives: the executor may launch several as one
      size_t j = i;
      while (j < nOps && !isP2pKind(ops[j].kind)) ++j;
      s = runGpuOps(comm, ops + i, j - i);
      i = j;
    } else {
      s = runCollective(comm, ops[i]);
      ++i;
    }
  }
  return s;
}

}  // namespace collcomm::detail
