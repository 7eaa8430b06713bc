// The channels' tree connections (plan/trees.h): made on a communicator's first tree collective.
//
// Lazily rather than at init: the tree is chosen only where forced (COLLCOMM_ALGO=Tree) or where
// the tuner finds it pays, and its connections (up to three peers both ways per channel, each a
// FIFO of the ring's size, NET sockets across hosts) would otherwise cost every communicator
// memory and init time for an algorithm most never run. Every rank reaches its first tree
// collective in the same call (the choice depends only on what all ranks share), so they connect
// in step, as the per-peer connections of the one-shot AllReduce do (core/enqueue.cc).
//
// Setup tier; blocks until the deadline at most.
#pragma once

#include "common/deadline.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// Makes comm->treeConns and comm->treeLinks (once; later calls find them made), with one step
// size on every rank's tree connections: the smallest any of them, or the ring, carries.
Status connectTrees(ccComm* comm, const Deadline& deadline);

}  // namespace collcomm::detail
