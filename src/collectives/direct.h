// The Direct algorithm: single-copy AllGather, Broadcast, ReduceScatter and AllReduce among ranks
// that can read each other's memory (host: threads of one process, or processes on one host with
// cross-memory attach, decided at init by transport/cma/cma_probe.h; the plan picks Direct only
// then). Portable code over the point-to-point engine (p2p.h) for its exchanges and the platform's
// peer-memory hooks for its data, instantiated by the host executor (device/host/host_direct.cc)
// and compiled as a CUDA kernel (device/cuda/direct_kernel.cu: ranks on one GPU, when forced).
//
// Per operation, over the per-peer collective connections core made (ExecColl::peers, never the
// user's point-to-point ones): every rank sends every peer a descriptor of its call (buffers,
// count, type, op, root) and checks theirs; then each rank reads what it needs straight from the
// peers' buffers and reduces in rank order (rank_order_reduce.h), so every rank gets the same
// bits (Broadcast's root also writes a part into each peer, so both copy); AllReduce exchanges
// READY ("my block is reduced") between its reduce-scatter and all-gather halves; a final DONE
// ("I no longer read your buffers") exchange keeps every buffer valid until no peer reads it.
//
// Platform, beyond what the engine needs (the contract in device/host/host_platform.h):
//   peerPointer(rank, remote) -> const void*   where this thread can load rank's memory at `remote`
//                                              (an address in that rank's space) with plain loads,
//                                              or null when it must be copied with readPeer
//   readPeer(rank, remote, dst, bytes) -> bool  copies rank's memory at `remote` to dst (rank may be
//                                              this one); false once it failed (recorded, the
//                                              peer blamed). The copy is complete, and ordered
//                                              before what the thread publishes next, on return
//   writePeer(rank, src, remote, bytes) -> bool the same the other way
// Host: plain pointers between threads, cross-memory attach between processes
// (transport/cma/peer_memory.h). CUDA: a peer's pointer as it is (ranks of one process, unified
// addressing); ranks in other processes need their buffers mapped (CUDA IPC), not done yet.
//
// Tier: control and data. The algorithm allocates nothing: its scratch is the executor's
// (DirectWork). No syscalls but the platform's (cross-memory attach is one per copy).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/coll_list.h"
#include "collectives/coll_work.h"
#include "collectives/p2p.h"
#include "collectives/rank_order_reduce.h"
#include "common/host_device.h"
#include "device/dtypes.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"
#include "device/transfer.h"

namespace collcomm::detail {

// What a rank tells every peer about its call before any data moves.
struct DirectDesc {
  uint64_t sendbuff;
  uint64_t recvbuff;
  uint64_t count;
  int32_t kind;
  int32_t dtype;
  int32_t op;  // a built-in ccRedOp_t; -1 for an op made by ccRedOpCreatePreMulSum
  int32_t root;
  // The functor's argument on this rank (a PreMulSum's scalar is each rank's own): a reduction
  // with a pre-op applies each operand's own rank's.
  uint64_t opArg;
};

inline constexpr uint64_t kDirectReadyToken = 0x5245414459ull;  // "READY": this rank's block is reduced
inline constexpr uint64_t kDirectDoneToken = 0x444f4e45ull;     // "DONE": this rank no longer reads peers' buffers

// Each peer operand of a reduction that the platform cannot load directly is read into the
// scratch in chunks of this many bytes over all operands, so the reduction works on cached data.
inline constexpr size_t kDirectReduceScratchBytes = size_t{256} << 10;
inline constexpr size_t kDirectMinChunkBytes = size_t{4} << 10;
// Block boundaries of AllReduce and Broadcast fall on multiples of this many bytes.
inline constexpr size_t kDirectBlockAlignBytes = 64;

// The collectives Direct runs.
CC_HD inline bool directRuns(CollKind k) {
  return k == CollKind::kAllGather || k == CollKind::kBroadcast || k == CollKind::kReduceScatter ||
         k == CollKind::kAllReduce;
}

// Scratch per operand of one reduction chunk (DirectWork::chunk holds nranks of them).
CC_HD inline size_t directChunkBytes(int nranks) {
  const size_t even = kDirectReduceScratchBytes / static_cast<size_t>(nranks);
  const size_t perOperand = even > kDirectMinChunkBytes ? even : kDirectMinChunkBytes;
  return perOperand / kDirectBlockAlignBytes * kDirectBlockAlignBytes;
}

// One rank's part of a Direct collective. The scratch comes from the executor; what is marked
// shared is one copy for all of the platform's cooperating threads (host: the one thread; CUDA:
// the block's, in shared or global memory), the rest may be per thread.
struct DirectWork {
  CollKind kind;
  const void* sendbuff;
  void* recvbuff;
  size_t count;       // elements: of each rank's block (AllGather, ReduceScatter), else of the buffer
  size_t elemSize;    // bytes of one element of dtype
  int32_t dtype;      // the call's ccDataType_t, compared with the peers'
  int32_t builtinOp;  // the call's ccRedOp_t when built in, else -1 (compared)
  uint64_t opArg;     // the reduction functor's argument on this rank, as the functor was made with
  uint32_t callTag;   // what every step of its exchanges says of the call (call_tag.h)
  int root;           // Broadcast
  int rank;
  int nranks;
  const ExecPeerConn* peers;  // nranks entries, connected (this rank's own unused)
  DirectDesc* descs;          // nranks entries, shared
  uint64_t* tokens;           // nranks entries, shared
  ExecTransfer* transfers;    // 2 * (nranks - 1) entries
  void* chunk;                // nranks * directChunkBytes(nranks) bytes, shared (reducing kinds only)
};

// Rank `rank`'s DirectWork for collective c (builtinOp: as ExecColl::builtinOp; opArg: what the
// reduction functor was made with) over the executor's connections and scratch (sizes as
// DirectWork says): the one place both executors fill it.
CC_HD inline DirectWork directWorkOf(const CollWork& c, int32_t builtinOp, uint64_t opArg, int rank,
                                     const ExecPeerConn* peers, DirectDesc* descs, uint64_t* tokens,
                                     ExecTransfer* transfers, void* chunk) {
  return DirectWork{c.kind,
                    c.sendbuff,
                    c.recvbuff,
                    c.count,
                    dtypeSize(c.dtype),
                    static_cast<int32_t>(c.dtype),
                    builtinOp,
                    opArg,
                    callTagOf(c),
                    c.root,
                    rank,
                    c.nranks,
                    peers,
                    descs,
                    tokens,
                    transfers,
                    chunk};
}

// Which peers an exchange sends to or receives from: all, none, or one rank (its number).
inline constexpr int kDirectAll = -1, kDirectNone = -2;

// Sends `bytes` at `mine` (shared) to the peers `to` names and receives rank p's into
// slots + p * bytes (shared) from those `from` names, all at once. It does not depend on the
// element type: one out-of-line copy per platform serves every kernel (inlined into each of its
// call sites, it doubled the Direct kernels' code and nvcc's time).
template <class Platform>
CC_HD CC_DEVICE_NOINLINE bool directExchange(Platform& plat, const DirectWork& w, const void* mine, size_t bytes,
                                             void* slots, int to, int from) {
  size_t k = 0;
  for (int p = 0; p < w.nranks; ++p) {
    if (p == w.rank) continue;
    const ExecPeerConn& conn = w.peers[p];
    if (to == kDirectAll || to == p)
      w.transfers[k++] = ExecTransfer{true, p, const_cast<void*>(mine), bytes, conn.send, nullptr, 0};
    if (from == kDirectAll || from == p)
      w.transfers[k++] = ExecTransfer{false, p, static_cast<char*>(slots) + bytes * p, bytes, nullptr, conn.recv, 0};
  }
  if (k == 0) return true;
  P2pEngine<Platform> engine(plat, w.transfers, k, w.callTag);
  if (!engine.run()) return false;
  plat.barrier();  // what arrived, visible to every thread
  return true;
}

struct DirectResult {
  bool done = false;
  // Not done: the first rank whose call differs from this rank's (descs holds both), or -1 when a
  // wait or a peer copy failed (the platform holds why).
  int mismatch = -1;
};

// T and Fn: the element type and reduction (AllGather and Broadcast move bytes: any T, elemSize
// says the element's size).
template <class T, class Fn, class Platform>
class DirectAlgo {
 public:
  CC_HD DirectAlgo(Platform& plat, const Fn& fn, const DirectWork& w) : plat_(plat), fn_(fn), w_(w) {}

  CC_HD DirectResult run() {
    DirectResult r;
    if (!directRuns(w_.kind)) return r;
    if (!exchangeDescriptors(&r.mismatch)) return r;
    switch (w_.kind) {
      case CollKind::kAllGather:
        r.done = allGather();
        break;
      case CollKind::kBroadcast:
        r.done = broadcast();
        break;
      case CollKind::kReduceScatter:
        r.done = reduceScatter();
        break;
      default:
        r.done = allReduce();
        break;
    }
    return r;
  }

 private:
  static constexpr int kAll = kDirectAll, kNone = kDirectNone;

  CC_HD int n() const { return w_.nranks; }
  CC_HD int rank() const { return w_.rank; }

  CC_HD bool exchange(const void* mine, size_t bytes, void* slots, int to, int from) {
    return directExchange(plat_, w_, mine, bytes, slots, to, from);
  }

  // Sends `token` to the peers `to` names and waits for theirs from those `from` names.
  CC_HD bool signal(uint64_t token, int to, int from) {
    if (plat_.tid() == 0) w_.tokens[rank()] = token;
    plat_.barrier();
    return exchange(&w_.tokens[rank()], sizeof(uint64_t), w_.tokens, to, from);
  }

  CC_HD bool exchangeDescriptors(int* mismatch) {
    if (plat_.tid() == 0) {
      DirectDesc& mine = w_.descs[rank()];
      mine.sendbuff = reinterpret_cast<uint64_t>(w_.sendbuff);
      mine.recvbuff = reinterpret_cast<uint64_t>(w_.recvbuff);
      mine.count = w_.count;
      mine.kind = static_cast<int32_t>(w_.kind);
      mine.dtype = w_.dtype;
      const bool reduces = w_.kind == CollKind::kAllReduce || w_.kind == CollKind::kReduceScatter;
      mine.op = reduces ? w_.builtinOp : -1;
      mine.root = w_.kind == CollKind::kBroadcast ? w_.root : -1;
      mine.opArg = w_.opArg;
    }
    plat_.barrier();
    if (!exchange(&w_.descs[rank()], sizeof(DirectDesc), w_.descs, kAll, kAll)) return false;
    const DirectDesc& mine = w_.descs[rank()];
    for (int p = 0; p < n(); ++p) {
      const DirectDesc& d = w_.descs[p];
      // Exactly: every rank must come to the same verdict (a PreMulSum, -1, matches another, whatever
      // its scalar, and no built-in op).
      const bool sameOp = d.op == mine.op;
      if (d.kind != mine.kind || d.count != mine.count || d.dtype != mine.dtype || d.root != mine.root || !sameOp) {
        *mismatch = p;
        return false;
      }
    }
    return true;
  }

  CC_HD bool read(int p, uint64_t remote, void* dst, size_t bytes) {
    return plat_.readPeer(p, reinterpret_cast<const void*>(remote), dst, bytes);
  }
  CC_HD bool write(int p, const void* src, uint64_t remote, size_t bytes) {
    return plat_.writePeer(p, src, reinterpret_cast<void*>(remote), bytes);
  }

  CC_HD bool allGather() {
    const size_t bytes = w_.count * w_.elemSize;
    char* recv = static_cast<char*>(w_.recvbuff);
    if (w_.sendbuff != recv + bytes * rank() &&
        !read(rank(), reinterpret_cast<uint64_t>(w_.sendbuff), recv + bytes * rank(), bytes))
      return false;
    // Starting at the next rank spreads the readers over the peers' buffers.
    for (int i = 1; i < n(); ++i) {
      const int p = (rank() + i) % n();
      if (!read(p, w_.descs[p].sendbuff, recv + bytes * p, bytes)) return false;
    }
    return signal(kDirectDoneToken, kAll, kAll);
  }

  // Block b of an AllReduce or Broadcast: elements [begin, end), boundaries on kDirectBlockAlignBytes.
  CC_HD void block(int b, size_t* begin, size_t* end) const {
    const size_t align = w_.elemSize < kDirectBlockAlignBytes ? kDirectBlockAlignBytes / w_.elemSize : 1;
    size_t per = (w_.count + n() - 1) / n();
    per = (per + align - 1) / align * align;
    *begin = minSize(w_.count, per * b);
    *end = minSize(w_.count, per * (b + 1));
  }

  // Broadcast: the root's buffer is cut into n blocks (as AllReduce's); the root writes one into
  // each peer's buffer while that peer reads the other n-1 from the root, so both sides of every
  // pair copy at once (the root (n-1)/n of the buffer in all, each peer (n-1)/n). The root says
  // when its writes are done and each peer when it no longer reads; neither returns before the
  // other has. The block the root writes to peer p: the peers in rank order after the root take
  // blocks 0..n-2; none (-1) when an out-of-place root addresses p's memory directly (host:
  // threads of one process), whose own copy (plain memcpy, as fast as p's reads) already balances
  // p's reads: threads, 16 MiB out of place, 470-530 us with the root copying only its own buffer
  // against 780-1030 also pushing. Across processes the root's own copy is ~4x cheaper than a
  // cross-memory read, so it pushes.
  CC_HD int pushedBlock(int p, int root) const {
    const bool rootInPlace = w_.descs[root].sendbuff == w_.descs[root].recvbuff;
    const int other = p == rank() ? root : p;
    if (!rootInPlace && plat_.peerPointer(other, reinterpret_cast<const void*>(w_.descs[other].recvbuff)) != nullptr)
      return -1;
    return (p - root + n()) % n() - 1;
  }

  CC_HD bool broadcast() {
    const size_t elem = w_.elemSize, bytes = w_.count * elem;
    const int root = w_.root;
    const char* src = reinterpret_cast<const char*>(w_.descs[root].sendbuff);
    size_t begin, end;
    if (rank() == root) {
      for (int i = 1; i < n(); ++i) {
        const int p = (root + i) % n();
        const int b = pushedBlock(p, root);
        if (b < 0) continue;
        block(b, &begin, &end);
        if (!write(p, src + begin * elem, w_.descs[p].recvbuff + begin * elem, (end - begin) * elem)) return false;
      }
      // Out of place, the root's own copy runs while the peers finish reading.
      if (!signal(kDirectDoneToken, kAll, kNone)) return false;
      if (w_.sendbuff != w_.recvbuff && !read(rank(), reinterpret_cast<uint64_t>(w_.sendbuff), w_.recvbuff, bytes))
        return false;
      return signal(kDirectDoneToken, kNone, kAll);
    }
    const int mine = pushedBlock(rank(), root);
    for (int b = 0; b < n(); ++b) {
      if (b == mine) continue;
      block(b, &begin, &end);
      if (!read(root, reinterpret_cast<uint64_t>(src + begin * elem), static_cast<char*>(w_.recvbuff) + begin * elem,
                (end - begin) * elem))
        return false;
    }
    return signal(kDirectDoneToken, root, root);
  }

  // dst[i] = operand_0[i] (+) operand_1[i] (+) ... for i < count, in rank order, where operand p
  // starts at byte `offset` of rank p's send buffer. ownAliased: dst is this rank's own operand
  // (in place). Ranks 0 and 1 reduce over it as it is (the first pass reads element i of both
  // operands before writing it); higher ranks' operands would be overwritten by earlier passes,
  // so they are copied aside chunk by chunk first.
  CC_HD bool reduceBlock(size_t offset, size_t count, T* dst, bool ownAliased) {
    if (count == 0) return true;
    const size_t slot = directChunkBytes(n());
    const size_t chunkElems = slot / sizeof(T);
    char* scratch = static_cast<char*>(w_.chunk);
    const bool ownAside = ownAliased && rank() >= 2;
    for (size_t first = 0; first < count; first += chunkElems) {
      const size_t elems = minSize(chunkElems, count - first);
      const size_t at = offset + first * sizeof(T), len = elems * sizeof(T);
      for (int p = 0; p < n(); ++p) {
        const void* remote = reinterpret_cast<const void*>(w_.descs[p].sendbuff + at);
        if (p == rank()) {
          if (ownAside)
            reduceCopy(fn_, plat_.tid(), plat_.nthreads(), elems, static_cast<const T*>(remote), false,
                       static_cast<const T*>(nullptr), false, reinterpret_cast<T*>(scratch + slot * p),
                       static_cast<T*>(nullptr), false);
        } else if (plat_.peerPointer(p, remote) == nullptr && !plat_.readPeer(p, remote, scratch + slot * p, len)) {
          return false;
        }
      }
      plat_.barrier();  // every operand in place before any thread reduces
      auto operand = [&](int p) -> const T* {
        const void* remote = reinterpret_cast<const void*>(w_.descs[p].sendbuff + at);
        if (p == rank()) return static_cast<const T*>(ownAside ? scratch + slot * p : remote);
        const void* near = plat_.peerPointer(p, remote);
        return static_cast<const T*>(near != nullptr ? near : scratch + slot * p);
      };
      // A PreMulSum op's scalar is each rank's own (AVG's, built in, is everyone's): each operand is
      // pre-processed with its own rank's functor, into its slot, then reduced as it is.
      if (Fn::kHasPreOp && w_.builtinOp < 0) {
        for (int p = 0; p < n(); ++p) {
          const Fn own(w_.descs[p].opArg);
          reduceCopy(own, plat_.tid(), plat_.nthreads(), elems, operand(p), true, static_cast<const T*>(nullptr), false,
                     reinterpret_cast<T*>(scratch + slot * p), static_cast<T*>(nullptr), false);
        }
        plat_.barrier();
        reduceInRankOrder<T>(
            plat_, fn_, n(), [&](int p) { return reinterpret_cast<const T*>(scratch + slot * p); }, dst + first, elems,
            /*pre=*/false);
      } else {
        reduceInRankOrder<T>(plat_, fn_, n(), operand, dst + first, elems);
      }
      plat_.barrier();  // the slots are free for the next chunk
    }
    return true;
  }

  CC_HD bool reduceScatter() {
    const size_t bytes = w_.count * sizeof(T);
    T* recv = static_cast<T*>(w_.recvbuff);
    const bool inPlace = static_cast<const void*>(recv) == static_cast<const char*>(w_.sendbuff) + bytes * rank();
    if (!reduceBlock(bytes * rank(), w_.count, recv, inPlace)) return false;
    return signal(kDirectDoneToken, kAll, kAll);
  }

  CC_HD bool allReduce() {
    T* recv = static_cast<T*>(w_.recvbuff);
    size_t begin, end;
    block(rank(), &begin, &end);
    if (!reduceBlock(begin * sizeof(T), end - begin, recv + begin, w_.sendbuff == w_.recvbuff)) return false;
    // In place, reading a peer's block overwrites this rank's input there, which that peer may
    // still be reducing: wait until every block is reduced.
    if (!signal(kDirectReadyToken, kAll, kAll)) return false;
    for (int i = 1; i < n(); ++i) {
      const int p = (rank() + i) % n();
      block(p, &begin, &end);
      if (!read(p, w_.descs[p].recvbuff + begin * sizeof(T), recv + begin, (end - begin) * sizeof(T))) return false;
    }
    return signal(kDirectDoneToken, kAll, kAll);
  }

  Platform& plat_;
  const Fn& fn_;
  const DirectWork& w_;
};

// One rank's part of the Direct collective w.kind (directRuns), to the end or the first failure.
template <class T, class Fn, class Platform>
CC_HD DirectResult directCollective(Platform& plat, const Fn& fn, const DirectWork& w) {
  return DirectAlgo<T, Fn, Platform>(plat, fn, w).run();
}

}  // namespace collcomm::detail
