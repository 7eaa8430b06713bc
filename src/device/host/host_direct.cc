// The Direct algorithm: single-copy AllGather, Broadcast, ReduceScatter and AllReduce among ranks
// that can read each other's memory (threads of one process, or processes on one host with
// cross-memory attach; decided at init by transport/cma/cma_probe.h, and the plan picks Direct
// only then).
//
// Per operation, over the per-peer connections core made (ExecColl::peers: the collective ones,
// never the user's p2p ones; on two ranks the ring's first channel, which joins them both ways):
// every rank sends every peer a descriptor of its call (buffers, count, type, op, root) and checks
// theirs; then each rank reads what it needs straight from the peers' buffers
// (transport/cma/peer_memory.h) and reduces in rank order (Broadcast's root also writes a part into
// each peer, so both copy); AllReduce exchanges "my block is reduced" between its reduce-scatter
// and all-gather halves; a final "done reading your buffers" exchange keeps every buffer valid
// until no peer reads it any more. Control and data tier: runs on the calling thread, waits under
// the operation's deadline and the communicator's abort flag.
//
// A host-only algorithm of the host executor: reading a peer's memory is a host platform hook
// (cross-memory attach), and the algorithm around it is not yet portable code over Primitives (a
// later step of issue "one path").
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "common/log.h"
#include "device/dtypes.h"
#include "device/host/host_executor.h"
#include "device/host/stream_store.h"
#include "transport/cma/peer_memory.h"

namespace collcomm::detail {
namespace {

// Each peer operand of a cross-process reduction is read into the scratch buffer in chunks of
// this many bytes over all operands, so the reduction works on cached data.
constexpr size_t kReduceScratchBytes = size_t{256} << 10;
constexpr size_t kMinChunkBytes = size_t{4} << 10;
// Block boundaries of AllReduce and Broadcast fall on multiples of this many bytes.
constexpr size_t kBlockAlignBytes = 64;

// What a rank tells every peer about its call before any data moves.
struct DirectDesc {
  uint64_t sendbuff;
  uint64_t recvbuff;
  uint64_t count;
  int32_t kind;
  int32_t dtype;
  int32_t op;  // a built-in ccRedOp_t; -1 for an op made by ccRedOpCreatePreMulSum (not compared)
  int32_t root;
};

constexpr uint64_t kReadyToken = 0x5245414459ull;  // "READY": this rank's block is reduced
constexpr uint64_t kDoneToken = 0x444f4e45ull;     // "DONE": this rank no longer reads peers' buffers

class DirectRun {
 public:
  DirectRun(const ExecSetup& setup, const ExecColl& op, const HostWaitContext& ctx, std::vector<char>& scratch)
      : op_(op),
        ctx_(ctx),
        scratch_(scratch),
        hostNames_(setup.hostNames),
        n_(setup.nranks),
        rank_(setup.rank),
        elem_(dtypeSize(op.dtype)),
        descs_(setup.nranks),
        peers_(setup.nranks) {
    for (int p = 0; p < n_; ++p)
      peers_[p] = PeerMemory{p, setup.peers[p].pid, setup.peers[p].sameProcess, setup.hostNames[p]};
  }

  Status run() {
    CC_CHECK(exchangeDescriptors());
    switch (op_.kind) {
      case CollKind::kAllGather:
        return allGather();
      case CollKind::kBroadcast:
        return broadcast();
      case CollKind::kReduceScatter:
        return reduceScatter();
      case CollKind::kAllReduce:
        return allReduce();
      default:
        break;
    }
    return CC_ERROR(Status::kInternalError, "%s on rank %d: the Direct algorithm does not run this collective",
                    collName(op_.kind), rank_);
  }

 private:
  const char* name() const { return collName(op_.kind); }

  // Sends `mine` (bytes) to the peers `to` names and receives into slots[p * bytes] from those
  // `from` names (kAll, kNone, or one rank); every wait under the operation's deadline.
  static constexpr int kAll = -1, kNone = -2;
  Status exchange(const void* mine, size_t bytes, char* slots, int to, int from) {
    std::vector<ExecTransfer> t;
    t.reserve(2 * static_cast<size_t>(n_));
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      const ExecPeerConn& conn = op_.peers[p];
      if (to == kAll || to == p)
        t.push_back(ExecTransfer{true, p, const_cast<void*>(mine), bytes, conn.send, nullptr, 0});
      if (from == kAll || from == p)
        t.push_back(ExecTransfer{false, p, slots + bytes * p, bytes, nullptr, conn.recv, 0});
    }
    if (t.empty()) return kOk;
    return hostRunP2p(t.data(), t.size(), rank_, ctx_);
  }

  Status exchangeDescriptors() {
    DirectDesc& mine = descs_[rank_];
    mine = DirectDesc{reinterpret_cast<uint64_t>(op_.sendbuff),
                      reinterpret_cast<uint64_t>(op_.recvbuff),
                      op_.count,
                      static_cast<int32_t>(op_.kind),
                      static_cast<int32_t>(op_.dtype),
                      op_.builtinOp,
                      op_.root};
    if (!collReduces(op_.kind)) mine.op = -1;
    if (op_.kind != CollKind::kBroadcast) mine.root = -1;
    CC_CHECK(exchange(&mine, sizeof(DirectDesc), reinterpret_cast<char*>(descs_.data()), kAll, kAll));
    for (int p = 0; p < n_; ++p) {
      const DirectDesc& d = descs_[p];
      const bool sameOp = d.op == mine.op || d.op < 0 || mine.op < 0;
      if (d.kind == mine.kind && d.count == mine.count && d.dtype == mine.dtype && d.root == mine.root && sameOp)
        continue;
      blame(rank_);
      const bool kindOk = d.kind >= 0 && d.kind < kNumCollKinds;
      const bool dtypeOk = d.dtype >= 0 && d.dtype < ccNumTypes;
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d: rank %d (host %s) called %s with count %llu, type %s, op %d, root %d where this "
                      "rank has count %zu, type %s, op %d, root %d; every rank must make the same call",
                      name(), rank_, p, hostNames_[p], kindOk ? collName(static_cast<CollKind>(d.kind)) : "?",
                      static_cast<unsigned long long>(d.count),
                      dtypeOk ? dtypeName(static_cast<ccDataType_t>(d.dtype)) : "?", d.op, d.root, op_.count,
                      dtypeName(op_.dtype), mine.op, mine.root);
    }
    return kOk;
  }

  // Copies `bytes` at `remote` in rank p's memory (p may be this rank) to `dst`, or (write) the
  // other way. Large results (the plan's streamResults) bypass the cache when this thread does the
  // copy, as the ring's do; process_vm_readv/writev copy in the kernel, with plain stores.
  Status read(int p, uint64_t remote, void* dst, size_t bytes) { return copy(p, dst, remote, bytes, false); }
  Status write(int p, const void* src, uint64_t remote, size_t bytes) {
    return copy(p, const_cast<void*>(src), remote, bytes, true);
  }
  Status copy(int p, void* local, uint64_t remote, size_t bytes, bool intoPeer) {
    void* far = reinterpret_cast<void*>(remote);
    if (peers_[p].sameProcess && ctx_.streamResults) {
      intoPeer ? streamCopy(far, local, bytes) : streamCopy(local, far, bytes);
      return kOk;
    }
    const Status s = intoPeer ? writePeer(peers_[p], local, far, bytes, name(), rank_)
                              : readPeer(peers_[p], far, local, bytes, name(), rank_);
    if (!isOk(s)) blame(p);
    return s;
  }

  // Before telling peers that a result is complete: streaming stores are weakly ordered.
  Status signalAll(uint64_t token) {
    if (ctx_.streamResults) streamFence();
    std::vector<uint64_t> got(static_cast<size_t>(n_));
    return exchange(&token, sizeof(token), reinterpret_cast<char*>(got.data()), kAll, kAll);
  }

  Status allGather() {
    const size_t bytes = op_.count * elem_;
    char* recv = static_cast<char*>(op_.recvbuff);
    if (op_.sendbuff != recv + bytes * rank_)
      CC_CHECK(read(rank_, reinterpret_cast<uint64_t>(op_.sendbuff), recv + bytes * rank_, bytes));
    // Starting at the next rank spreads the readers over the peers' buffers.
    for (int i = 1; i < n_; ++i) {
      const int p = (rank_ + i) % n_;
      CC_CHECK(read(p, descs_[p].sendbuff, recv + bytes * p, bytes));
    }
    return signalAll(kDoneToken);
  }

  // Broadcast: the root's buffer is cut into n blocks (as AllReduce's); the root writes one into
  // each peer's buffer while that peer reads the other n-1 from the root, so both sides of every
  // pair copy at once (the root (n-1)/n of the buffer in all, each peer (n-1)/n). The root says
  // when its writes are done and each peer when it no longer reads; neither returns before the
  // other has. The block the root writes to peer p: the peers in rank order after the root take
  // blocks 0..n-2; none (-1) when an out-of-place root shares a process with p, whose own copy
  // (plain memcpy, as fast as p's reads) already balances p's reads: threads, 16 MiB out of
  // place, 470-530 us with the root copying only its own buffer against 780-1030 also pushing.
  // Across processes the root's own copy is ~4x cheaper than a cross-memory read, so it pushes.
  int pushedBlock(int p, int root) const {
    const bool rootInPlace = descs_[root].sendbuff == descs_[root].recvbuff;
    if (!rootInPlace && peers_[p == rank_ ? root : p].sameProcess) return -1;
    return (p - root + n_) % n_ - 1;
  }

  Status broadcast() {
    const size_t bytes = op_.count * elem_;
    const int root = op_.root;
    const char* src = reinterpret_cast<const char*>(descs_[root].sendbuff);
    uint64_t token = kDoneToken;
    std::vector<uint64_t> got(static_cast<size_t>(n_));
    size_t begin, end;
    if (rank_ == root) {
      for (int i = 1; i < n_; ++i) {
        const int p = (root + i) % n_;
        const int b = pushedBlock(p, root);
        if (b < 0) continue;
        block(b, &begin, &end);
        CC_CHECK(write(p, src + begin * elem_, descs_[p].recvbuff + begin * elem_, (end - begin) * elem_));
      }
      // Out of place, the root's own copy runs while the peers finish reading.
      if (ctx_.streamResults) streamFence();
      CC_CHECK(exchange(&token, sizeof(token), nullptr, kAll, kNone));
      if (op_.sendbuff != op_.recvbuff)
        CC_CHECK(read(rank_, reinterpret_cast<uint64_t>(op_.sendbuff), op_.recvbuff, bytes));
      return exchange(&token, sizeof(token), reinterpret_cast<char*>(got.data()), kNone, kAll);
    }
    const int mine = pushedBlock(rank_, root);
    for (int b = 0; b < n_; ++b) {
      if (b == mine) continue;
      block(b, &begin, &end);
      CC_CHECK(read(root, reinterpret_cast<uint64_t>(src + begin * elem_),
                    static_cast<char*>(op_.recvbuff) + begin * elem_, (end - begin) * elem_));
    }
    if (ctx_.streamResults) streamFence();
    return exchange(&token, sizeof(token), reinterpret_cast<char*>(got.data()), root, root);
  }

  // Scratch for the operands of one chunk: n slots of chunkBytes().
  size_t chunkBytes() const {
    const size_t perOperand = std::max(kMinChunkBytes, kReduceScratchBytes / static_cast<size_t>(n_));
    return perOperand / kBlockAlignBytes * kBlockAlignBytes;
  }
  Status ensureScratch() {
    const size_t want = chunkBytes() * static_cast<size_t>(n_);
    if (scratch_.size() >= want) return kOk;
    try {
      scratch_.resize(want);
    } catch (const std::bad_alloc&) {
      return CC_ERROR(Status::kSystemError, "%s on rank %d: no memory for the Direct algorithm's %zu-byte scratch",
                      name(), rank_, want);
    }
    return kOk;
  }

  // dst[i] = operand_0[i] (+) operand_1[i] (+) ... for i < count, in rank order, where operand p
  // starts at byte `offset` of rank p's send buffer. ownAliased: dst is this rank's own operand
  // (in place). Ranks 0 and 1 reduce over it as it is (the first pass reads element i of both
  // operands before writing it); higher ranks' operands would be overwritten by earlier passes,
  // so they are copied aside chunk by chunk first.
  Status reduceBlock(size_t offset, size_t count, void* dst, bool ownAliased) {
    if (count == 0) return kOk;
    CC_CHECK(ensureScratch());
    const RedOpSpec spec = op_.op;
    const size_t slot = chunkBytes();
    const size_t chunkElems = slot / elem_;
    std::vector<const void*> srcs(static_cast<size_t>(n_));
    char* scratch = scratch_.data();
    for (size_t first = 0; first < count; first += chunkElems) {
      const size_t elems = std::min(chunkElems, count - first);
      const size_t at = offset + first * elem_, len = elems * elem_;
      for (int p = 0; p < n_; ++p) {
        const uint64_t remote = descs_[p].sendbuff + at;
        if (p == rank_) {
          srcs[p] = reinterpret_cast<const void*>(remote);
          if (ownAliased && rank_ >= 2) {
            memcpy(scratch + slot * p, srcs[p], len);
            srcs[p] = scratch + slot * p;
          }
        } else if (peers_[p].sameProcess) {
          srcs[p] = reinterpret_cast<const void*>(remote);
        } else {
          CC_CHECK(read(p, remote, scratch + slot * p, len));
          srcs[p] = scratch + slot * p;
        }
      }
      CC_CHECK(hostReduceLocal(
          HostLocalReduceArgs{srcs.data(), n_, static_cast<char*>(dst) + first * elem_, elems, op_.dtype, spec}));
    }
    return kOk;
  }

  Status reduceScatter() {
    const size_t bytes = op_.count * elem_;
    const bool inPlace = op_.recvbuff == static_cast<const char*>(op_.sendbuff) + bytes * rank_;
    CC_CHECK(reduceBlock(bytes * rank_, op_.count, op_.recvbuff, inPlace));
    return signalAll(kDoneToken);
  }

  // Block b of an AllReduce or Broadcast: elements [begin, end), boundaries on kBlockAlignBytes.
  void block(int b, size_t* begin, size_t* end) const {
    const size_t align = std::max<size_t>(1, kBlockAlignBytes / elem_);
    size_t per = (op_.count + n_ - 1) / n_;
    per = (per + align - 1) / align * align;
    *begin = std::min(op_.count, per * b);
    *end = std::min(op_.count, per * (b + 1));
  }

  Status allReduce() {
    char* recv = static_cast<char*>(op_.recvbuff);
    size_t begin, end;
    block(rank_, &begin, &end);
    CC_CHECK(reduceBlock(begin * elem_, end - begin, recv + begin * elem_, op_.sendbuff == op_.recvbuff));
    // In place, reading a peer's block overwrites this rank's input there, which that peer may
    // still be reducing: wait until every block is reduced.
    CC_CHECK(signalAll(kReadyToken));
    for (int i = 1; i < n_; ++i) {
      const int p = (rank_ + i) % n_;
      block(p, &begin, &end);
      CC_CHECK(read(p, descs_[p].recvbuff + begin * elem_, recv + begin * elem_, (end - begin) * elem_));
    }
    return signalAll(kDoneToken);
  }

  void blame(int culprit) {
    if (ctx_.failure != nullptr) *ctx_.failure = ExecFailure{culprit, kGoneFailed};
  }

  const ExecColl& op_;
  const HostWaitContext& ctx_;
  std::vector<char>& scratch_;
  const char* const* hostNames_;
  const int n_;
  const int rank_;
  const size_t elem_;
  std::vector<DirectDesc> descs_;
  std::vector<PeerMemory> peers_;
};

}  // namespace

Status HostExecutor::runDirect(const ExecColl& coll, const HostWaitContext& ctx) {
  return DirectRun(setup_, coll, ctx, directScratch_).run();
}

}  // namespace collcomm::detail
