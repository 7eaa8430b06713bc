// The host executor (device/executor.h): runs a host communicator's operations on host memory, the
// calling thread doing the work, and blocks until each is done. Its parts, each in its own
// translation unit: the ring collectives by family (host_run_*.cc, instantiating the portable
// algorithms over Primitives<..., HostPlatform>), point-to-point batches (host_p2p.cc, the portable
// collectives/p2p.h over HostPlatform), the one-shot AllReduce on more than two ranks
// (host_one_shot.cc, the portable oneShotAllReduceAny over HostPlatform) and Direct
// (host_direct.cc, the portable collectives/direct.h over HostPlatform, whose peer-memory hooks
// are the host's). Included by src/device/host only: core sees the Executor interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "collectives/direct.h"
#include "common/status.h"
#include "device/executor.h"
#include "device/fifo.h"
#include "device/host/host_platform.h"
#include "device/op_arg.h"

namespace collcomm::detail {

// A ring or tree collective (kind AllReduce, Broadcast, Reduce, AllGather or ReduceScatter) and
// where this rank's channels are.
struct HostCollArgs : CollWork {
  const ExecChannel* channels;       // ring: at least nChannels entries (ExecSetup::channels)
  const TreeLinks* trees = nullptr;  // Tree: nChannels entries (ExecColl::trees)
};

// Blocks until done or failed (abort, dead peer, deadline: see HostPlatform).
Status hostRunCollective(const HostCollArgs& args, const HostWaitContext& ctx);

// Ring collectives by family, each in its own translation unit (they instantiate many templates).
Status hostRunAllReduce(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunReduce(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunReduceScatter(const HostCollArgs& args, const HostWaitContext& ctx);
Status hostRunCopyCollective(const HostCollArgs& args, const HostWaitContext& ctx);
// The tree AllReduce (collectives/tree_all_reduce.h) over args.trees; host_run_tree.cc.
Status hostRunTreeAllReduce(const HostCollArgs& args, const HostWaitContext& ctx);

// A batch of point-to-point transfers (ExecTransfer's contract), their connections made.
Status hostRunP2p(ExecTransfer* ops, size_t nOps, int selfRank, const HostWaitContext& ctx);

class HostExecutor final : public Executor {
 public:
  explicit HostExecutor(const ExecSetup& setup);

  int maxChannels() const override { return static_cast<int>(setup_.channels.size()); }
  size_t maxTransfersPerRun() const override { return setup_.maxTransfersPerRun; }
  Status checkBuffer(const void*, size_t, const char*, const char*) const override { return kOk; }
  Status run(const ExecColl& coll, const ExecOp& op) override;
  Status runP2p(ExecTransfer* transfers, size_t n, const ExecOp& op) override;
  Status failure(const char* const*, std::string*) const override { return kOk; }
  void abort() override {}
  bool receiversFindFar(int nChannels) const override;
  void leave(int, GoneReason) override {}

 private:
  // What the waits of operation `op` run under (no stream choices: the callers add the plan's).
  HostWaitContext waitContext(const ExecOp& op) const;
  // host_one_shot.cc: collectives/one_shot_all_reduce.h's oneShotAllReduceAny over this
  // executor's scratch.
  Status runOneShotAllReduce(const ExecColl& coll, const HostWaitContext& ctx);
  // host_direct.cc: collectives/direct.h over this executor's scratch.
  Status runDirect(const ExecColl& coll, const HostWaitContext& ctx);

  const ExecSetup setup_;
  std::vector<char> gatherScratch_;          // one-shot AllReduce: every rank's input
  std::vector<ExecTransfer> peerTransfers_;  // one-shot and Direct: the transfers of one exchange
  std::vector<DirectDesc> directDescs_;      // Direct: every rank's call
  std::vector<uint64_t> directTokens_;       // Direct: every rank's READY or DONE
  std::vector<char> directScratch_;          // Direct ReduceScatter/AllReduce: peers' operands, one chunk each
};

}  // namespace collcomm::detail
