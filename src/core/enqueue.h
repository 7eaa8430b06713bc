// From an API call to work: argument checks (nothing is queued when they fail), grouping, and
// running a communicator's queued operations: planned, their connections made, and handed to the
// communicator's executor (device/executor.h).
#pragma once

#include <vector>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// One user call, as queued. For Send/Recv, `root` is the peer.
struct Op {
  CollKind kind;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ccDataType_t dtype;
  ccRedOp_t op;
  int root;
  ccStream_t stream;  // GPU communicators: the stream it is enqueued on; host: NULL
};

// The object representation of an enum argument as an int. Reading a C enum whose value lies
// outside its enumerators' range is undefined in C++, so arguments are checked in this form first.
template <class E>
int enumBits(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  __builtin_memcpy(&v, &e, sizeof(v));
  return v;
}

// Whether `k` is made of point-to-point transfers (run in batches, not planned as a collective).
inline bool isP2pKind(CollKind k) {
  return k == CollKind::kSend || k == CollKind::kRecv || k == CollKind::kAlltoAll || k == CollKind::kGather ||
         k == CollKind::kScatter;
}

// The bytes each buffer of `op` spans on this rank (elem: the dtype's size).
void bufferSpans(const ccComm* comm, const Op& op, size_t elem, size_t* sendBytes, size_t* recvBytes);

// The reduction `op` names, with its scalar or divisor for this communicator.
RedOpSpec opSpec(const ccComm* comm, const Op& op);

// Records a failed operation: tells the peers (marks this rank's connections gone, naming the
// culprit) and marks the communicator failed. Returns `s`.
Status failOp(ccComm* comm, Status s, const ExecFailure& failure);

// Range checks of the enum arguments, before they are used as enums.
Status checkEnumArgs(CollKind kind, int dtype, int op);

// A usable communicator handle, or a sentence saying why not.
Status checkComm(const ccComm* comm);

// Checks `op` completely, then runs it now, or queues it: inside ccGroupStart/End, or on a
// non-blocking communicator's worker (Status::kInProgress).
Status enqueue(ccComm* comm, const Op& op, ccStream_t stream);

// Whether running `ops` would first connect to a peer (a point-to-point connection, the per-peer
// collective ones an algorithm that talks to every peer needs, or the channels' tree ones): a
// handshake that needs the peer's call running at the same time.
bool opsNeedConnecting(ccComm* comm, const Op* ops, size_t nOps);

// Makes comm->peerConns usable: on more than two ranks, the collective connections to every peer
// both ways (once; later calls find them made). On two, the table points at the ring's first
// channel, which joins the ranks both ways already (ccComm::peerConns).
Status connectAllCollPeers(ccComm* comm, const Deadline& deadline);

// Runs queued operations in order on the calling thread; consecutive point-to-point operations
// (Send, Recv, AlltoAll, Gather, Scatter) progress together as one batch. The caller keeps the
// communicator marked busy (ApiScope, or the group job).
Status runOps(ccComm* comm, const Op* ops, size_t nOps);

}  // namespace collcomm::detail
