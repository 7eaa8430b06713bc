// Tree connections on first use (tree_conns.h).
#include "core/tree_conns.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/log.h"
#include "transport/connect.h"

namespace collcomm::detail {
namespace {

constexpr uint64_t kTreeTagBase = 0x5452454500000000ull;  // "TREE" + channel

}  // namespace

Status connectTrees(ccComm* comm, const Deadline& deadline) {
  if (comm->treesConnected) return kOk;
  const int nChannels = static_cast<int>(comm->trees.size());
  comm->treeConns.resize(nChannels);
  comm->treeLinks.assign(nChannels, TreeLinks{nullptr, nullptr, {nullptr, nullptr}, {nullptr, nullptr}});
  if (comm->nranks == 1) {
    comm->treesConnected = true;
    return kOk;
  }
  std::vector<ConnectRequest> requests;
  std::vector<const char*> names;
  names.reserve(static_cast<size_t>(nChannels) * 6);
  auto both = [&](int peer, int c, P2pPeer& p) {
    const uint64_t tag = kTreeTagBase + static_cast<uint64_t>(c);
    names.push_back(nullptr);
    requests.push_back({peer, true, tag, comm->fifoSizes.ring, &p.send, nullptr, &p.sendMem, &names.back()});
    names.push_back(nullptr);
    requests.push_back({peer, false, tag, comm->fifoSizes.ring, nullptr, &p.recv, &p.recvMem, &names.back()});
  };
  for (int c = 0; c < nChannels; ++c) {
    const TreeNode& node = comm->trees[c].node[comm->rank];
    TreeConns& t = comm->treeConns[c];
    if (node.parent >= 0) both(node.parent, c, t.parent);
    for (int k = 0; k < 2; ++k)
      if (node.children[k] >= 0) both(node.children[k], c, t.child[k]);
  }
  CC_CHECK(connectPeers(*comm->bootstrap, comm->peers, comm->rank, comm->connSetup(deadline), requests));
  for (const ConnectRequest& r : requests) comm->usesNet |= *r.transportName == kNetTransportName;

  // One step size for every tree connection of every rank (Primitives take the smaller of their
  // two connections', and a parent and child must cut alike), no larger than the ring's, which
  // the plan reports.
  struct Steps {
    uint64_t simpleBytes;
    uint64_t llLines;
  };
  Steps mine{comm->channels[0].send.simpleStepMax, comm->channels[0].send.llStepLines};
  for (const ConnectRequest& r : requests) {
    if (r.isSend) {
      mine.simpleBytes = std::min<uint64_t>(mine.simpleBytes, r.send->simpleStepMax);
      mine.llLines = std::min<uint64_t>(mine.llLines, r.send->llStepLines);
    } else {
      mine.simpleBytes = std::min<uint64_t>(mine.simpleBytes, r.recv->simpleStepMax);
      mine.llLines = std::min<uint64_t>(mine.llLines, r.recv->llStepLines);
    }
  }
  std::vector<Steps> all(comm->nranks);
  all[comm->rank] = mine;
  CC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Steps), deadline));
  Steps agreed = mine;
  for (const Steps& s : all) {
    agreed.simpleBytes = std::min(agreed.simpleBytes, s.simpleBytes);
    agreed.llLines = std::min(agreed.llLines, s.llLines);
  }
  for (const ConnectRequest& r : requests) {
    if (r.isSend) {
      r.send->simpleStepMax = static_cast<uint32_t>(agreed.simpleBytes);
      r.send->llStepLines = static_cast<uint32_t>(agreed.llLines);
    } else {
      r.recv->simpleStepMax = static_cast<uint32_t>(agreed.simpleBytes);
      r.recv->llStepLines = static_cast<uint32_t>(agreed.llLines);
    }
  }

  for (int c = 0; c < nChannels; ++c) {
    const TreeNode& node = comm->trees[c].node[comm->rank];
    TreeConns& t = comm->treeConns[c];
    TreeLinks& l = comm->treeLinks[c];
    if (node.parent >= 0) {
      t.parent.sendReady = t.parent.recvReady = true;
      l.toParent = &t.parent.send;
      l.fromParent = &t.parent.recv;
    }
    for (int k = 0; k < 2; ++k) {
      if (node.children[k] < 0) continue;
      t.child[k].sendReady = t.child[k].recvReady = true;
      l.toChild[k] = &t.child[k].send;
      l.fromChild[k] = &t.child[k].recv;
    }
    CC_INFO(kSubsysInit, "tree channel %d: rank %d parent %d children %d %d", c, comm->rank, node.parent,
            node.children[0], node.children[1]);
  }
  comm->treesConnected = true;
  return kOk;
}

}  // namespace collcomm::detail
