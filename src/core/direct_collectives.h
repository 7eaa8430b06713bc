// The Direct algorithm: single-copy AllGather, Broadcast, ReduceScatter and AllReduce among ranks
// that can read each other's memory (threads of one process, or processes on one host with
// cross-memory attach; ccComm::directReach, decided at init by transport/cma/cma_probe.h).
//
// Per operation, over the per-peer collective connections (ccComm::collPeers, never the user's
// p2p ones; on two ranks the ring's first channel, which joins them both ways): every rank sends
// every peer a descriptor of its call (buffers, count, type, op, root) and checks theirs; then
// each rank reads what it needs straight from the peers' buffers (transport/cma/peer_memory.h)
// and reduces in rank order (Broadcast's root also writes a part into each peer, so both copy);
// AllReduce exchanges "my block is reduced" between its reduce-scatter and all-gather halves; a
// final "done reading your buffers" exchange keeps every buffer valid until no peer reads it any
// more. Control and data tier: runs on the calling thread, waits under the communicator's
// deadline and abort flag.
#pragma once

#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "core/comm.h"
#include "core/enqueue.h"
#include "device/host/host_executor.h"
#include "plan/tuner.h"

namespace collcomm::detail {

// Runs `op` (AllGather, Broadcast, ReduceScatter or AllReduce; comm->directReach set) to completion.
// Failures are recorded with failOp, so peers waiting on this rank are told.
Status runDirectCollective(ccComm* comm, const Op& op, const CollPlan& plan);

// Defined in core/enqueue.cc, shared with the other operation paths.
// The reduction `op` names, with its scalar or divisor for this communicator.
RedOpSpec opSpec(const ccComm* comm, const Op& op);
// Records a failed operation: tells the peers (marks this rank's connections gone, naming the
// culprit) and marks the communicator failed. Returns `s`.
Status failOp(ccComm* comm, Status s, const HostFailure& failure);
// Connects (in step with the peers) the collPeers connections `ops` need and points `ops` at them.
Status connectCollPeers(ccComm* comm, std::vector<HostP2pOp>& ops, const Deadline& deadline);

}  // namespace collcomm::detail
