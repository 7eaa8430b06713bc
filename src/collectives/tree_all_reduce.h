// Tree AllReduce: reduce up the channel's tree to its root, which applies the post-op (AVG's
// division), then broadcast the result down; NCCL's tree AllReduce (its runTreeUpDown), over
// Primitives that each join one receive and one send connection.
//
// Each phase is pipelined in chunks: a rank forwards a chunk as soon as it has it, so a message
// takes about depth x chunk + size / bandwidth per phase, against the ring's 2(n-1) hops. The up
// phase runs over all of the channel's chunks before the down phase starts, as in NCCL's non-split
// tree: one thread per channel is then enough (no rank waits on its parent while one of its
// children waits on it), at the cost of the phases overlapping only across ranks.
//
// A rank with two children has no three-way verb here: it reduces child 0's data with its own into
// its output (roles[kTreeUp0], receive only), then child 1's data with that output and sends the sum up
// (roles[kTreeUp1]); going down it receives from the parent into its output while sending to child 0
// (roles[kTreeDown0]), then sends the output to child 1 (roles[kTreeDown1]). The output already holds
// pre-processed values, so those second reads use the FromOutput verbs (no second pre-op).
//
// Every rank gets the root's bits (the result travels down unchanged); the order of reduction is
// the tree's: at each rank, child 1 (+) (child 0 (+) own), children's partial sums as they arrive.
//
// Tier: data path.
#pragma once

#include "collectives/coll_work.h"

namespace collcomm::detail {

// The four Primitives a rank's tree work runs over, each one (send, recv) pair of its links
// (treeRoleConns); a role a rank does not play is never used.
enum TreeRole : int { kTreeUp0 = 0, kTreeUp1 = 1, kTreeDown0 = 2, kTreeDown1 = 3, kTreeRoles = 4 };

// The connections of role `role`: up0 receives from child 0 and, unless there is a child 1, sends
// to the parent (a leaf: only sends); up1 receives from child 1 and sends to the parent; down0
// receives from the parent and sends to child 0; down1 sends to child 1.
CC_HD inline void treeRoleConns(const TreeLinks& l, int role, SendConn** send, RecvConn** recv) {
  switch (role) {
    case kTreeUp0:
      *recv = l.fromChild[0];
      *send = l.fromChild[1] != nullptr ? nullptr : l.toParent;
      return;
    case kTreeUp1:
      *recv = l.fromChild[1];
      *send = l.fromChild[1] != nullptr ? l.toParent : nullptr;
      return;
    case kTreeDown0:
      *recv = l.fromParent;
      *send = l.toChild[0];
      return;
    default:
      *recv = nullptr;
      *send = l.toChild[1];
      return;
  }
}

struct TreeWork {
  const void* sendbuff;
  void* recvbuff;
  // This channel's share: elements [partOffset, partOffset + partCount).
  size_t partOffset;
  size_t partCount;
  size_t chunkElems;  // elements per verb call (a multiple of the step)
  bool root;          // no parent
  int nChildren;      // 0, 1 or 2
};

// Channel c's TreeWork of collective a over its tree links l: the share and chunking of
// channelWorkOf (the ring's, so both split alike), the tree's shape from the links.
CC_HD inline TreeWork treeWorkOf(const CollWork& a, int c, const TreeLinks& l, size_t stepElems) {
  const RingWork share = channelWorkOf(a, c, 0, nullptr, stepElems);
  TreeWork w{};
  w.sendbuff = share.sendbuff;
  w.recvbuff = share.recvbuff;
  w.partOffset = share.partOffset;
  w.partCount = share.partCount;
  w.chunkElems = share.chunkElems;
  w.root = l.toParent == nullptr;
  w.nChildren = (l.toChild[0] != nullptr) + (l.toChild[1] != nullptr);
  return w;
}

// roles: kTreeRoles Primitives, made over treeRoleConns(links, role). Needs a parent or a child
// (one rank alone is the executor's local copy).
template <class T, class Prims>
CC_HD void treeAllReduce(Prims* roles, const TreeWork& w) {
  const T* src = static_cast<const T*>(w.sendbuff);
  T* dst = static_cast<T*>(w.recvbuff);
  const size_t end = w.partOffset + w.partCount;
  Prims& up0 = roles[kTreeUp0];
  Prims& up1 = roles[kTreeUp1];
  Prims& down0 = roles[kTreeDown0];
  Prims& down1 = roles[kTreeDown1];
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    if (w.nChildren == 0) {
      up0.send(src + base, len);
    } else if (w.nChildren == 1) {
      if (w.root)
        up0.recvReduceCopy(src + base, dst + base, len, /*post=*/true);
      else
        up0.recvReduceSend(src + base, len);
    } else {
      up0.recvReduceCopy(src + base, dst + base, len, /*post=*/false);
      if (w.root)
        up1.recvReduceCopyFromOutput(dst + base, dst + base, len, /*post=*/true);
      else
        up1.recvReduceSendFromOutput(dst + base, len);
    }
  }
  for (size_t base = w.partOffset; base < end; base += w.chunkElems) {
    const size_t len = minSize(w.chunkElems, end - base);
    if (w.root) {
      down0.sendFromOutput(dst + base, len);
    } else if (w.nChildren == 0) {
      down0.recv(dst + base, len, /*post=*/false);
    } else {
      down0.recvCopySend(dst + base, len);
    }
    if (w.nChildren == 2) down1.sendFromOutput(dst + base, len);
  }
}

}  // namespace collcomm::detail
