// The host executor's entry points: run one collective, or one batch of point-to-point transfers,
// on host memory with the calling thread doing the work. The work is described in plain terms
// (connections, ring order, buffers) so this layer knows nothing of communicators.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "common/status.h"
#include "device/fifo.h"
#include "device/host/host_platform.h"
#include "device/op_arg.h"

namespace collcomm::detail {

struct HostChannel {
  SendConn* send;
  RecvConn* recv;
  const int* ringRanks;
  int ringPos;
};

struct HostCollArgs {
  CollKind kind;  // AllReduce, Broadcast, Reduce, AllGather or ReduceScatter
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // as RingWork::count
  ccDataType_t dtype;
  RedOpSpec op;  // reduction (ignored by Broadcast/AllGather)
  int root;
  int nranks;
  Protocol proto;
  Algorithm algo;
  int nChannels;
  const HostChannel* channels;
};

// Blocks until done or failed (abort, dead peer, deadline: see HostPlatform).
Status hostRunCollective(const HostCollArgs& args, const HostWaitContext& ctx);

// Ring collectives by family, each in its own translation unit (they instantiate many templates).
Status hostRunAllReduce(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunReduce(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunReduceScatter(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunCopyCollective(const HostCollArgs& args, const HostWaitContext& ctx);

// dst = pre(srcs[0]) (+) pre(srcs[1]) (+) ... in that order, then post: the local half of the
// one-shot AllReduce on more than two ranks, and of the Direct ReduceScatter/AllReduce. dst may be
// srcs[0] or srcs[1] (the first pass reads both before writing); no other overlap.
struct HostLocalReduceArgs {
  const void* const* srcs;
  int nSrcs;
  void* dst;
  size_t count;
  ccDataType_t dtype;
  RedOpSpec op;
};
Status hostReduceLocal(const HostLocalReduceArgs& args);

// One point-to-point transfer of a batch. Transfers to (or from) the same peer complete in order;
// transfers with different peers progress together, so a batch that both sends to and receives
// from every peer cannot deadlock. Self transfers pair the i-th send with the i-th receive.
struct HostP2pOp {
  bool isSend;
  int peer;
  void* buf;
  size_t bytes;
  SendConn* send;  // isSend, peer != self
  RecvConn* recv;  // !isSend, peer != self
  size_t done = 0;
};

Status hostRunP2p(std::vector<HostP2pOp>& ops, int selfRank, const HostWaitContext& ctx);

}  // namespace collcomm::detail
