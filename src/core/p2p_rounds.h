// A collective made of point-to-point transfers (AlltoAll, Gather, Scatter) in rounds that each fit
// one executor run (Executor::maxTransfersPerRun: a GPU kernel moves at most 32).
//
// Transfers are grouped by distance: a send to rank + d and a receive from rank - d (mod nranks)
// are at distance d. Round k holds distances [k * span, (k + 1) * span) on every rank, with span
// the same everywhere (half the limit: at most one send and one receive per distance). A send in
// round k is then received in round k of its peer, so each round is closed among the ranks: ranks
// that run their rounds one after another, each to completion, never wait on a later round. A
// send/recv group has no such pairing and is never split.
#pragma once

#include <cstddef>
#include <vector>

#include "device/transfer.h"

namespace collcomm::detail {

// The rounds of `transfers` (one collective's, on rank `rank` of `nranks`) for runs of at most
// `perRun` transfers (>= 2), in order, empty rounds left out; each round keeps the transfers'
// relative order. Sends to self and receives from self (distance 0) share the first round.
std::vector<std::vector<ExecTransfer>> p2pRounds(const std::vector<ExecTransfer>& transfers, int rank, int nranks,
                                                 size_t perRun);

}  // namespace collcomm::detail
