// The channels' trees (plan/trees.h) on synthetic placements: each tree spans every rank without a
// cycle, a host's ranks are a chain in ring order, no rank has more than two children, the host
// trees of a pair are complementary (no host a leaf in both), and every rank computes them alike.
#include "plan/trees.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace collcomm::detail {
namespace {

uint64_t hostKey(int h) { return 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(h + 11); }

std::vector<RankPlace> onHosts(const std::vector<int>& hostOf) {
  std::vector<RankPlace> places;
  for (size_t r = 0; r < hostOf.size(); ++r) places.push_back({hostKey(hostOf[r]), 1000 + r});
  return places;
}

// Parent and child links agree, one root, every rank reached from it exactly once (spanning,
// acyclic), at most two children each.
void expectSpanningTree(const RankTree& t, int n) {
  ASSERT_EQ(static_cast<int>(t.node.size()), n);
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    const TreeNode& x = t.node[r];
    if (x.parent < 0) {
      ++roots;
      EXPECT_EQ(t.root, r);
    } else {
      const TreeNode& p = t.node[x.parent];
      EXPECT_TRUE(p.children[0] == r || p.children[1] == r) << "rank " << r << " parent " << x.parent;
    }
    for (int c : x.children) {
      if (c >= 0) {
        EXPECT_EQ(t.node[c].parent, r);
      }
    }
    if (x.children[1] >= 0) {
      EXPECT_GE(x.children[0], 0);
    }
    if (x.children[0] >= 0 && x.children[1] >= 0) {
      EXPECT_NE(x.children[0], x.children[1]);
    }
  }
  EXPECT_EQ(roots, 1);
  std::vector<int> seen(n, 0);
  std::vector<int> stack{t.root};
  while (!stack.empty()) {
    const int r = stack.back();
    stack.pop_back();
    ASSERT_EQ(seen[r]++, 0) << "rank " << r << " reached twice";
    for (int c : t.node[r].children)
      if (c >= 0) stack.push_back(c);
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r << " not in the tree";
}

TEST(Trees, BinaryTreeOfFourteenHostsAsDrawn) {
  // NCCL's drawing: 0 - 8; 8: 4, 12; 4: 2, 6; 12: 10, 13; 2: 1, 3; ...
  const TreeNode root = hostTreeNode(14, 0, false);
  EXPECT_EQ(root.parent, -1);
  EXPECT_EQ(root.children[0], 8);
  EXPECT_EQ(root.children[1], -1);
  const TreeNode n8 = hostTreeNode(14, 8, false);
  EXPECT_EQ(n8.parent, 0);
  EXPECT_EQ(n8.children[0], 4);
  EXPECT_EQ(n8.children[1], 12);
  const TreeNode n12 = hostTreeNode(14, 12, false);
  EXPECT_EQ(n12.parent, 8);
  EXPECT_EQ(n12.children[0], 10);
  EXPECT_EQ(n12.children[1], 13);
  const TreeNode n13 = hostTreeNode(14, 13, false);
  EXPECT_EQ(n13.parent, 12);
  EXPECT_EQ(n13.children[0], -1);
  // The mirror: host 13 plays host 0.
  EXPECT_EQ(hostTreeNode(14, 13, true).parent, -1);
  EXPECT_EQ(hostTreeNode(14, 13, true).children[0], 5);
}

TEST(Trees, HostTreesAreComplementary) {
  for (int n = 1; n <= 70; ++n) {
    for (int mirror = 0; mirror < 2; ++mirror) {
      RankTree t;
      t.node.resize(n);
      for (int i = 0; i < n; ++i) {
        t.node[i] = hostTreeNode(n, i, mirror == 1);
        if (t.node[i].parent < 0) t.root = i;
      }
      expectSpanningTree(t, n);
    }
    for (int i = 0; i < n && n > 1; ++i) {
      const bool leaf0 = hostTreeNode(n, i, false).nChildren() == 0;
      const bool leaf1 = hostTreeNode(n, i, true).nChildren() == 0;
      EXPECT_FALSE(leaf0 && leaf1) << "host " << i << " of " << n << " is a leaf in both trees";
      // Even: every host a leaf in exactly one. Odd: all but host 0, inner in both.
      if (n % 2 == 0 || i != 0) {
        EXPECT_TRUE(leaf0 || leaf1) << "host " << i << " of " << n << " inner in both";
      }
    }
  }
}

TEST(Trees, OneHostIsAChainInRingOrder) {
  // Two processes on one host: ranks {0, 2} and {1, 3}; the ring (and chain) is 0 2 1 3.
  std::vector<RankPlace> places = onHosts({0, 0, 0, 0});
  places[0].process = places[2].process = 7;
  places[1].process = places[3].process = 9;
  const auto trees = planTrees(places, 2);
  ASSERT_EQ(trees.size(), 2u);
  for (const RankTree& t : trees) {
    expectSpanningTree(t, 4);
    EXPECT_EQ(t.root, 0);
    EXPECT_EQ(t.node[0].children[0], 2);
    EXPECT_EQ(t.node[2].children[0], 1);
    EXPECT_EQ(t.node[1].children[0], 3);
    EXPECT_EQ(t.node[3].nChildren(), 0);
  }
}

TEST(Trees, OneRankIsARootAlone) {
  const auto trees = planTrees(onHosts({0}), 3);
  ASSERT_EQ(trees.size(), 3u);
  for (const RankTree& t : trees) {
    EXPECT_EQ(t.root, 0);
    EXPECT_EQ(t.node[0].parent, -1);
    EXPECT_EQ(t.node[0].nChildren(), 0);
  }
}

TEST(Trees, FourHostsOfOneRankRoundTheDoubleTree) {
  // Host trees of 4: first 0 - 2 - {1, 3}; second (mirror) 3 - 1 - {2, 0}.
  const auto trees = planTrees(onHosts({0, 1, 2, 3}), 2);
  EXPECT_EQ(trees[0].root, 0);
  EXPECT_EQ(trees[0].node[0].children[0], 2);
  EXPECT_EQ(trees[0].node[2].children[0], 1);
  EXPECT_EQ(trees[0].node[2].children[1], 3);
  EXPECT_EQ(trees[1].root, 3);
  EXPECT_EQ(trees[1].node[3].children[0], 1);
  EXPECT_EQ(trees[1].node[1].children[0], 2);
  EXPECT_EQ(trees[1].node[1].children[1], 0);
}

TEST(Trees, ChildHostsAttachAtHeadAndTail) {
  // Three hosts of two ranks, numbered round-robin: host chains [0 3] [1 4] [2 5]; first host tree
  // 0 - 2 - 1 (n = 3: host 2 is the root's child, host 1 host 2's child).
  const auto t = planTrees(onHosts({0, 1, 2, 0, 1, 2}), 1)[0];
  expectSpanningTree(t, 6);
  EXPECT_EQ(t.root, 0);
  EXPECT_EQ(t.node[0].children[0], 3);  // the chain
  EXPECT_EQ(t.node[0].children[1], 2);  // host 2's head, at the root host's head
  EXPECT_EQ(t.node[2].children[0], 5);
  EXPECT_EQ(t.node[2].children[1], 1);  // host 2's first child host at its head
  EXPECT_EQ(t.node[1].children[0], 4);
}

// Random jobs: H hosts x R ranks, numbered at random; every tree is spanning, acyclic, at most two
// children per rank; each host's ranks a chain from its head in ring order; hosts' heads form the
// host tree; channels alternate between the two trees; computing again gives the same trees.
TEST(Trees, RandomJobsSpanChainAndAlternate) {
  std::mt19937 rng(25);
  for (int trial = 0; trial < 300; ++trial) {
    const int hosts = 1 + static_cast<int>(rng() % 9);
    const int perHost = 1 + static_cast<int>(rng() % 5);
    std::vector<int> hostOf;
    for (int h = 0; h < hosts; ++h)
      for (int k = 0; k < perHost; ++k) hostOf.push_back(h);
    std::shuffle(hostOf.begin(), hostOf.end(), rng);
    const std::vector<RankPlace> places = onHosts(hostOf);
    const int n = static_cast<int>(places.size());
    const int nChannels = 1 + static_cast<int>(rng() % 4);
    const auto trees = planTrees(places, nChannels);
    ASSERT_EQ(static_cast<int>(trees.size()), nChannels);
    const std::vector<int> ring = planRings(places, 1, RingOrder::kHosts)[0];
    for (int c = 0; c < nChannels; ++c) {
      const RankTree& t = trees[c];
      expectSpanningTree(t, n);
      // Within a host, the ring order is the chain: each rank the first child of the one before.
      for (int i = 1; i < n; ++i) {
        if (places[ring[i]].host == places[ring[i - 1]].host) {
          EXPECT_EQ(t.node[ring[i]].parent, ring[i - 1]);
        }
      }
      // A rank's parent on another host is that host's head or last rank; the rank is a head.
      for (int r = 0; r < n; ++r) {
        const int p = t.node[r].parent;
        if (p < 0 || places[p].host == places[r].host) continue;
        const auto pos = std::find(ring.begin(), ring.end(), r) - ring.begin();
        EXPECT_TRUE(pos == 0 || places[ring[pos - 1]].host != places[r].host) << "rank " << r << " not a head";
      }
      EXPECT_EQ(t.node[t.root].parent, -1);
      if (c >= 2) {
        EXPECT_EQ(t.root, trees[c - 2].root);
        for (int r = 0; r < n; ++r) EXPECT_EQ(t.node[r].parent, trees[c - 2].node[r].parent);
      }
    }
    // Complementary across hosts: counting heads' children on other hosts, no host is a leaf in
    // both trees of a pair (beyond one host).
    if (nChannels >= 2 && hosts > 1) {
      for (int h = 0; h < hosts; ++h) {
        bool leafIn[2] = {true, true};
        for (int c = 0; c < 2; ++c)
          for (int r = 0; r < n; ++r)
            for (int ch : trees[c].node[r].children)
              if (ch >= 0 && places[r].host == hostKey(h) && places[ch].host != places[r].host) leafIn[c] = false;
        EXPECT_FALSE(leafIn[0] && leafIn[1]) << "trial " << trial << " host " << h;
      }
    }
    const auto again = planTrees(places, nChannels);
    for (int c = 0; c < nChannels; ++c)
      for (int r = 0; r < n; ++r) EXPECT_EQ(again[c].node[r].parent, trees[c].node[r].parent);
  }
}

}  // namespace
}  // namespace collcomm::detail
