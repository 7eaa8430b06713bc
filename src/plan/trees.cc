// Double binary trees across hosts, chains within them (trees.h).
#include "plan/trees.h"

#include <cstddef>

namespace collcomm::detail {
namespace {

// The first tree: node 0 the root with one child, every odd node a leaf.
TreeNode binaryTreeNode(int n, int i) {
  TreeNode t;
  if (n <= 1) return t;
  int bit = 1;
  while (bit < n && (i & bit) == 0) bit <<= 1;
  if (i == 0) {
    // bit is the first power of two >= n: the root's one child is the top of the rest.
    t.children[0] = bit >> 1;
    return t;
  }
  int up = (i ^ bit) | (bit << 1);
  if (up >= n) up = i ^ bit;
  t.parent = up;
  int low = bit >> 1;
  if (low == 0) return t;  // odd: a leaf
  t.children[0] = i - low;
  while (low > 0 && i + low >= n) low >>= 1;
  if (low > 0) t.children[1] = i + low;
  return t;
}

}  // namespace

TreeNode hostTreeNode(int n, int i, bool mirror) {
  if (!mirror) return binaryTreeNode(n, i);
  // Node i plays node m(i) of the first tree; its relatives are mapped back by the inverse.
  const bool shift = n % 2 == 1;
  auto to = [&](int x) { return shift ? (x - 1 + n) % n : n - 1 - x; };
  auto back = [&](int x) { return x < 0 ? -1 : (shift ? (x + 1) % n : n - 1 - x); };
  const TreeNode f = binaryTreeNode(n, to(i));
  TreeNode t;
  t.parent = back(f.parent);
  t.children[0] = back(f.children[0]);
  t.children[1] = back(f.children[1]);
  return t;
}

std::vector<RankTree> planTrees(const std::vector<RankPlace>& places, int nChannels) {
  const int n = static_cast<int>(places.size());
  // The hosts' chains: the rings' order (hosts by lowest rank, processes together) cut per host.
  const std::vector<int> order = planRings(places, 1, RingOrder::kHosts)[0];
  std::vector<std::vector<int>> chains;
  for (int i = 0; i < n; ++i) {
    if (i == 0 || places[order[i]].host != places[order[i - 1]].host) chains.emplace_back();
    chains.back().push_back(order[i]);
  }
  const int nHosts = static_cast<int>(chains.size());
  std::vector<RankTree> trees;
  for (int mirror = 0; mirror < 2 && mirror < nChannels; ++mirror) {
    RankTree tree;
    tree.node.assign(n, TreeNode{});
    auto addChild = [&](int parent, int child) {
      TreeNode& p = tree.node[parent];
      p.children[p.children[0] < 0 ? 0 : 1] = child;
      tree.node[child].parent = parent;
    };
    for (const std::vector<int>& chain : chains)
      for (size_t k = 1; k < chain.size(); ++k) addChild(chain[k - 1], chain[k]);
    for (int h = 0; h < nHosts; ++h) {
      const TreeNode t = hostTreeNode(nHosts, h, mirror == 1);
      if (t.parent < 0) tree.root = chains[h].front();
      // Children attach to this host's head (the first) and its last rank (the second): the head
      // already has the chain's next rank as a child, the last rank none. A host of one rank
      // takes both. The root's one child attaches at the head.
      for (int k = 0; k < 2; ++k) {
        const int child = t.children[k];
        if (child < 0) continue;
        const int at = k == 0 || t.children[0] < 0 ? chains[h].front() : chains[h].back();
        addChild(at, chains[child].front());
      }
    }
    trees.push_back(std::move(tree));
  }
  std::vector<RankTree> out;
  for (int c = 0; c < nChannels; ++c) out.push_back(trees[c % 2]);
  return out;
}

}  // namespace collcomm::detail
