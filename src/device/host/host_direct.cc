// The Direct algorithm on the host: the portable single-copy AllGather, Broadcast, ReduceScatter
// and AllReduce (collectives/direct.h) over HostPlatform on the calling thread, whose peer-memory
// hooks read and write a peer's buffers through plain pointers between threads and with
// cross-memory attach between processes (host_platform.cc). What is host-only here is the glue:
// the scratch the algorithm needs (descriptors, tokens, transfers, and for the reducing kinds the
// chunk its peers' operands are read into), grown on first need and kept; the dispatch by type
// and reduction; and the sentence for ranks whose calls differ.
#include <new>

#include "collectives/direct.h"
#include "device/dtypes.h"
#include "device/host/host_dispatch.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {
namespace {

struct DirectOnHost {
  template <class T, class Fn>
  static Status run(const DirectWork& w, uint64_t opArg, const HostWaitContext& ctx, DirectResult* result) {
    HostPlatform plat(ctx);
    const Fn fn(opArg);
    *result = directCollective<T>(plat, fn, w);
    return plat.status();
  }
};

}  // namespace

Status HostExecutor::runDirect(const ExecColl& c, const HostWaitContext& ctx) {
  const int n = setup_.nranks, rank = setup_.rank;
  const char* name = collName(c.kind);
  if (!directRuns(c.kind))
    return CC_ERROR(Status::kInternalError, "%s on rank %d: the Direct algorithm does not run this collective", name,
                    rank);
  const bool reduces = c.kind == CollKind::kAllReduce || c.kind == CollKind::kReduceScatter;
  const size_t chunkBytes = reduces ? directChunkBytes(n) * static_cast<size_t>(n) : 0;
  try {
    if (directDescs_.size() < static_cast<size_t>(n)) directDescs_.resize(n);
    if (directTokens_.size() < static_cast<size_t>(n)) directTokens_.resize(n);
    if (peerTransfers_.size() < 2 * static_cast<size_t>(n - 1)) peerTransfers_.resize(2 * static_cast<size_t>(n - 1));
    if (directScratch_.size() < chunkBytes) directScratch_.resize(chunkBytes);
  } catch (const std::bad_alloc&) {
    return CC_ERROR(Status::kSystemError, "%s on rank %d: no memory for the Direct algorithm's %zu-byte scratch", name,
                    rank, chunkBytes);
  }
  const DirectWork w =
      directWorkOf(collWorkOf(c, n), c.builtinOp, reduces ? c.op.opArg : 0, rank, c.peers, directDescs_.data(),
                   directTokens_.data(), peerTransfers_.data(), directScratch_.data());
  DirectResult r;
  // AllGather and Broadcast move bytes: one instantiation for every type.
  const Status s = reduces ? dispatchReduction<DirectOnHost>(c.dtype, c.op.kind, w, c.op.opArg, ctx, &r)
                           : DirectOnHost::run<uint8_t, FuncSum<uint8_t>>(w, 0, ctx, &r);
  if (r.mismatch < 0) return s;
  if (ctx.failure != nullptr) *ctx.failure = ExecFailure{rank, kGoneFailed};
  const DirectDesc& d = w.descs[r.mismatch];
  const DirectDesc& mine = w.descs[rank];
  const bool kindOk = d.kind >= 0 && d.kind < kNumCollKinds;
  const bool dtypeOk = d.dtype >= 0 && d.dtype < ccNumTypes;
  return CC_ERROR(Status::kInvalidUsage,
                  "%s on rank %d: rank %d (host %s) called %s with count %llu, type %s, op %d, root %d where this "
                  "rank has count %zu, type %s, op %d, root %d; every rank must make the same call",
                  name, rank, r.mismatch, setup_.hostNames[r.mismatch],
                  kindOk ? collName(static_cast<CollKind>(d.kind)) : "?", static_cast<unsigned long long>(d.count),
                  dtypeOk ? dtypeName(static_cast<ccDataType_t>(d.dtype)) : "?", d.op, d.root, c.count,
                  dtypeName(c.dtype), mine.op, mine.root);
}

}  // namespace collcomm::detail
