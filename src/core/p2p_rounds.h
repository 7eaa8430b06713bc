// A batch of point-to-point transfers (a send/recv group, AlltoAll, Gather, Scatter, or a group of
// them) in rounds that each fit one executor run (Executor::maxTransfersPerRun: a GPU kernel moves
// at most 32).
//
// A transfer's round is named by two things both ends compute alike:
//  - its ordinal: how many transfers in the same direction with the same peer come before it in
//    the batch. The k-th send to a peer meets that peer's k-th receive from us, the order
//    point-to-point operations match in;
//  - its distance: a send to rank + d and a receive from rank - d (mod nranks) are at distance d.
// Round (o, k) holds ordinal o at distances [k * span, (k + 1) * span) on every rank, with span the
// same everywhere (half the limit: at most one send and one receive per distance and ordinal).
// A send in round (o, k) is received in round (o, k) of its peer, so each round is closed among
// the ranks: ranks that run their rounds in the same order, each to completion, never wait on a
// later round.
#pragma once

#include <cstddef>
#include <vector>

#include "device/transfer.h"

namespace collcomm::detail {

// The rounds of `transfers` (one batch, on rank `rank` of `nranks`) for runs of at most `perRun`
// transfers (>= 2), in order, empty rounds left out; each round keeps the transfers' relative
// order. The k-th send to self and the k-th receive from self share a round.
std::vector<std::vector<ExecTransfer>> p2pRounds(const std::vector<ExecTransfer>& transfers, int rank, int nranks,
                                                 size_t perRun);

}  // namespace collcomm::detail
