// The channels' trees of a communicator, for the tree AllReduce (collectives/tree_all_reduce.h):
// plan/ decides them, core connects them (core/tree_conns.h).
//
// Shape, after NCCL's double binary trees (its graph/trees.cc), written anew:
// - Within a host the ranks form a chain in the rings' order for that host (rings.h: the ranks of
//   one process together): the first rank (the host's head) is the chain's top, each next rank the
//   child of the one before.
// - Across hosts, hosts numbered 0..H-1 in the rings' order (by lowest rank), a binary tree in
//   which every odd host is a leaf: host h's lowest set bit b; its parent is h ^ b | 2b (or h ^ b
//   where that is out of range), its children h - b/2 and the nearest h + b/2^k in range. Host 0 is
//   the root with one child. The second tree mirrors the first (host h plays H-1-h) when H is even
//   and shifts it by one (host h plays h-1) when H is odd, so no host is a leaf in both trees: with
//   H even every host is a leaf in exactly one, with H odd every host but host 0 (the first tree's
//   root, inner in both) is. A host's inner ranks then carry the tree's traffic in one tree and
//   only their own in the other, and channels alternate between the two (channel c uses tree c % 2).
// - Where a host's tree node joins the chain: its parent and its first child host attach at the
//   head, its second child host at the chain's last rank (NCCL's "balanced tree" pattern), so no
//   rank has more than two children and the tree's reduction runs through the whole chain anyway.
//
// Pure: from what every rank knows alike after the peer exchange, so every rank computes the same
// trees without talking.
#pragma once

#include <vector>

#include "plan/rings.h"

namespace collcomm::detail {

// One rank's place in one tree: -1 where there is none. children[0] is filled before children[1].
struct TreeNode {
  int parent = -1;
  int children[2] = {-1, -1};
  int nChildren() const { return (children[0] >= 0) + (children[1] >= 0); }
};

// One tree over all ranks: node[r] is rank r's place; root is the rank with no parent.
struct RankTree {
  std::vector<TreeNode> node;
  int root = 0;
};

// The binary tree over `n` nodes described above, node i's parent and children (-1: none).
// `mirror`: the second tree of the pair (mirrored or shifted, as n is even or odd).
TreeNode hostTreeNode(int n, int i, bool mirror);

// nChannels trees over places.size() ranks, channel c on the first (c even) or second tree.
std::vector<RankTree> planTrees(const std::vector<RankPlace>& places, int nChannels);

}  // namespace collcomm::detail
