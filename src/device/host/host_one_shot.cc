// The one-shot AllReduce on more than two ranks: every rank sends its input to every other (over
// the per-peer collective connections core made, never the user's point-to-point ones), then
// reduces all inputs in rank order, so every rank computes the same bits. One hand-off instead of
// the ring's 2(n-1); the planner picks it for small messages, where the hand-offs are the cost.
// (On two ranks the one-shot AllReduce is the ring's, in host_run_all_reduce.cc.)
//
// Host-only for now: its portable form, over Primitives, is a later step of issue "one path".
// Data tier, on the calling thread; the gather buffer grows on first need (setup cost, once).
#include <cstring>
#include <new>
#include <vector>

#include "device/dtypes.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {

Status HostExecutor::runOneShotAllReduce(const ExecColl& c, const HostWaitContext& ctx) {
  const int n = setup_.nranks, rank = setup_.rank;
  const size_t bytes = c.count * dtypeSize(c.dtype);
  if (gatherScratch_.size() < bytes * n) {
    try {
      gatherScratch_.resize(bytes * n);
    } catch (const std::bad_alloc&) {
      return CC_ERROR(Status::kSystemError,
                      "AllReduce on rank %d: no memory for the one-shot algorithm's %zu-byte gather buffer; unset "
                      "COLLCOMM_ALGO=OneShot for messages this large",
                      rank, bytes * n);
    }
  }
  char* inputs = gatherScratch_.data();
  // In place, this rank's input is overwritten by the first partial result: keep a copy.
  const void* own = c.sendbuff;
  if (c.sendbuff == c.recvbuff && bytes != 0) {
    memcpy(inputs + bytes * rank, c.sendbuff, bytes);
    own = inputs + bytes * rank;
  }
  std::vector<ExecTransfer> transfers;
  transfers.reserve(2 * (n - 1));
  for (int p = 0; p < n; ++p) {
    if (p == rank) continue;
    transfers.push_back(ExecTransfer{true, p, const_cast<void*>(c.sendbuff), bytes, c.peers[p].send, nullptr, 0});
    transfers.push_back(ExecTransfer{false, p, inputs + bytes * p, bytes, nullptr, c.peers[p].recv, 0});
  }
  CC_CHECK(hostRunP2p(transfers.data(), transfers.size(), rank, ctx));
  std::vector<const void*> srcs(n);
  for (int p = 0; p < n; ++p) srcs[p] = p == rank ? own : inputs + bytes * p;
  return hostReduceLocal(HostLocalReduceArgs{srcs.data(), n, c.recvbuff, c.count, c.dtype, c.op});
}

}  // namespace collcomm::detail
