// What the host hands the CUDA executor's ring kernels, and what the kernels hand back: plain
// structs shared by g++ (the launching side) and nvcc (the kernels). No CUDA header.
//
// Memory: every pointer in these structs must be usable from the GPU that runs the kernel
// (device memory, or pinned host memory mapped into its address space); the FIFOs behind the
// connections may live on a peer GPU or in host memory, which is why every flag access in the
// kernels is system scope.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "collectives/coll_work.h"
#include "device/fifo.h"
#include "device/reduce_ops.h"
#include "device/transfer.h"

namespace collcomm::detail {

// One kernel launch runs at most this many channels (one thread block each); the channel table
// travels in the kernel's parameters.
inline constexpr int kCudaMaxChannels = 32;
// Threads per block: a multiple of the warp size in [kCudaMinThreads, kCudaMaxThreads].
inline constexpr int kCudaMinThreads = 32;
inline constexpr int kCudaMaxThreads = 512;

// One channel's place on its ring. send/recv: the connection views (fifo.h) in device-visible
// memory (required when nranks > 1, like ringRanks). Each thread of the block works on a private copy; when the block ends, thread 0 writes
// the advanced step counters back, so the next operation on the channel continues the FIFO
// sequence. Only this channel's block touches them while the kernel runs.
struct CudaChannelArgs {
  SendConn* send;
  RecvConn* recv;
  const int* ringRanks;  // nranks entries, device-visible
  int ringPos;
  // A fused launch (CudaCollArgs::nMembers > 0): the member this block serves and the member's
  // channel it runs. Alone: 0 and the channel's own index.
  int member;
  int channel;
};

// Why a kernel gave up (CudaKernelStatus::reason).
enum class CudaFailReason : uint32_t {
  kNone = 0,
  kAborted,       // the abort flag was raised (ccCommAbort)
  kPeerGone,      // the peer marked its side of the connection kPeerGone
  kTimeout,       // one wait went timeoutNs without its condition coming true
  kStepMismatch,  // the peer's step size or call tag differs from ours (call_tag.h): different calls
  kBadStepSize,   // a step holds no element, or an LL step exceeds kMaxLlStepPayload (setup bug)
  kPeerExited,    // the process of the peer waited on exited (CudaWaitArgs::peerExited)
  kCallMismatch,  // Direct: a peer's descriptor names another call (got: its count, expected: ours)
};

// The outcome of one launch, in device-visible memory. The host zeroes it before the launch and
// reads it once the stream has passed the kernel. The first failing thread of any block claims
// `code` (a system-scope compare-and-swap from 0) and then fills the other fields; every other
// block sees code != 0 in its next slow-path check and stops too.
// The kernel claims the record (`claimed`), fills it, fences, and stores `code` last: a host that
// reads a nonzero `code` (acquire) reads the whole record.
struct CudaKernelStatus {
  uint32_t code;    // a ccResult_t; ccSuccess (0) while nothing failed
  uint32_t claimed; // set by the launch's first failure, which alone writes the record
  uint32_t reason;  // a CudaFailReason
  int32_t channel;  // the block that failed
  int32_t peerRank;
  uint64_t got;       // kStepMismatch: the peer's size word (call_tag.h); kPeerGone: its PeerState word
  uint64_t expected;  // kStepMismatch: the size word this rank expected
  char what[24];      // what the wait was for ("data", "buffer space"), NUL-terminated
};

// What every kernel's waits run under and where its outcome goes: a part of every launch's
// arguments, filled in one place (the CUDA executor) and checked in one (cudaWaitArgsOk).
struct CudaWaitArgs {
  int nthreads;  // threads per block
  // Waits: the abort flag (nullable; nonzero = abort) is polled in the slow path of every wait.
  // timeoutNs (nanoseconds of the GPU's globaltimer, 0 = no deadline) bounds each wait on its
  // own, from when it first reaches its slow path: a wait fails once its condition has stayed
  // false that long, so an operation of any length that keeps making progress never times out.
  const volatile uint32_t* abortFlag;
  // Nullable; indexed by rank: nonzero once that rank's process has exited (the executor's
  // ProcessWatch, common/process_watch.h). A wait fails on it only while waiting on that rank: a
  // peer may leave cleanly once its part is done while the others finish theirs.
  uint32_t* peerExited;
  uint64_t timeoutNs;
  CudaKernelStatus* status;  // required
  // Simple-protocol waits (a step's head or tail, the same word for the whole block): false, every
  // thread polls it (COLLCOMM_GPU_POLLERS=0); true, thread 0 polls and the block meets it at a
  // barrier (the default; cuda_platform.cuh waitUniform says why).
  bool onePoller;
};

// Whether a launch's wait arguments are usable: threads a multiple of the warp in
// [kCudaMinThreads, kCudaMaxThreads], and a status word.
inline bool cudaWaitArgsOk(const CudaWaitArgs& w) {
  return w.nthreads >= kCudaMinThreads && w.nthreads <= kCudaMaxThreads && w.nthreads % 32 == 0 &&
         w.status != nullptr;
}

// One rank's own part of a fused launch, where the ranks of a communicator that share a device
// run as one kernel (device/launch_group.h; docs/gpu.md, "Ranks sharing a GPU"): its buffers, its
// reduction's argument (PreMulSum's scalar may differ by rank), and its abort word and status.
// Everything else about the collective is the same on every member.
// At most this many members (so at least 4 channels each): the table travels in every ring
// launch's parameters, and more members than this on one GPU are rare.
inline constexpr int kCudaMaxMembers = 8;
struct CudaMemberArgs {
  const void* sendbuff;
  void* recvbuff;
  RedOpSpec op;
  const volatile uint32_t* abortFlag;
  uint32_t* peerExited;
  CudaKernelStatus* status;
};

// A group's collectives of one kind, type, reduction kind and protocol in one ring launch
// (ccGroupStart/End; docs/gpu.md, "One launch per group"): what differs between them. Every block
// runs the works of its channel in the order given, so that a peer's block meets them in the same
// order on the same FIFO; a larger group takes several launches.
inline constexpr int kCudaMaxGroupWorks = 16;
struct CudaGroupWork {
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // as CollWork::count (the launcher lowers byte-wise collectives to bytes)
  RedOpSpec op;
  int root;
  int nChannels;  // 1..the launch's nChannels
  Algorithm algo;
};

// Everything one launch needs, passed by value as the kernel's only parameter: the collective
// (CollWork, collectives/coll_work.h), what its waits run under, and its channels.
//   count: as RingWork::count, in elements of dtype; the launcher lowers the byte-wise
//          collectives (Broadcast, AllGather) to bytes itself (lowerToBytes).
//   nChannels: 1..kCudaMaxChannels. Channel c handles its channelWorkOf share, as the host
//   executor's channels do.
//   kind: AllReduce, Broadcast, Reduce, AllGather or ReduceScatter; algo (AllReduce): Ring or
//   OneShot (two ranks).
//   nMembers: 0, one rank alone: nChannels blocks, channels[c] is channel c. Else a fused launch of
//   nMembers ranks: nMembers x nChannels blocks (at most kCudaMaxChannels), channels[b] names block
//   b's member and channel, and the member's entry in members replaces CollWork's buffers and
//   reduction and CudaWaitArgs' abort word and status for that block.
//   nWorks: 0, CollWork is the launch's one collective. Else a group's nWorks collectives
//   (nMembers 0): work i replaces CollWork's buffers, count, reduction, root, algo and channel
//   count, and nChannels is the largest of theirs; block c runs, in order, the works with more
//   than c channels.
struct CudaCollArgs : CollWork, CudaWaitArgs {
  int nMembers;
  int nWorks;
  CudaMemberArgs members[kCudaMaxMembers];
  CudaChannelArgs channels[kCudaMaxChannels];
  CudaGroupWork works[kCudaMaxGroupWorks];
};

// Work i of a launch (nWorks 0: the launch's own collective, i 0).
CC_HD inline CollWork groupWorkOf(const CudaCollArgs& a, const CollWork& base, int i) {
  CollWork w = base;
  if (a.nWorks == 0) return w;
  const CudaGroupWork& g = a.works[i];
  w.sendbuff = g.sendbuff;
  w.recvbuff = g.recvbuff;
  w.count = g.count;
  w.op = g.op;
  w.root = g.root;
  w.nChannels = g.nChannels;
  w.algo = g.algo;
  return w;
}
// CUDA passes up to 4 KiB of kernel parameters on every device and driver (more needs CUDA 12.1
// and Volta or later).
static_assert(sizeof(CudaCollArgs) <= 4096, "the ring kernel's parameters outgrow 4 KiB");

// The tree AllReduce (tree_kernel.cuh): channel c's block runs collectives/tree_all_reduce.h over
// trees[c], this rank's connections to its parent and children on channel c's tree (null where
// there is none; at least one per channel when nranks > 1), device-visible, each the device copy
// the CUDA executor keeps for one of core's tree connections (core/tree_conns.h): each thread works
// on private copies and thread 0 writes the step counters back at the end (as CudaChannelArgs).
// kind: AllReduce; count in elements; nChannels 1..kCudaMaxChannels.
struct CudaTreeArgs : CollWork, CudaWaitArgs {
  int rank;  // this rank, named when it tells its peers it left
  TreeLinks trees[kCudaMaxChannels];
};

// One batch of point-to-point transfers for the point-to-point kernel (p2p_kernel.cu): one block
// runs the portable engine (collectives/p2p.h) over every transfer. The transfers' buffers and
// connections must be device-visible; each thread works on private copies of the connections and
// thread 0 writes their step counters back at the end (as CudaChannelArgs). Sends to self must
// pair with receives from self (checkSelfPairs, checked by the launcher).
inline constexpr int kCudaMaxP2pTransfers = 32;
struct CudaP2pArgs : CudaWaitArgs {
  int self;        // this rank
  int nTransfers;  // 0..kCudaMaxP2pTransfers
  ExecTransfer transfers[kCudaMaxP2pTransfers];
};

// The kernels that run one block over per-peer connections (one-shot, Direct): what they share.
// Each thread keeps private copies of the connections and of its 2(nranks - 1) transfers (so the
// rank count is bounded) and thread 0 writes the step counters back at the end (as
// CudaChannelArgs). nChannels and proto are unused (one block, Simple steps).
inline constexpr int kCudaMaxPeerRanks = 16;
struct CudaPeerCollArgs : CollWork, CudaWaitArgs {
  int rank;                               // this rank
  ExecPeerConn peers[kCudaMaxPeerRanks];  // device-visible connections to every peer (own unused)
};

// The one-shot AllReduce on more than two ranks (one_shot_kernel.cu): one block runs the portable
// collectives/one_shot_all_reduce.h (oneShotAllReduceAny) over the per-peer connections.
// recvbuff may be sendbuff; count in elements; nranks 2..kCudaMaxOneShotRanks.
// gather: nranks * count elements of device memory the kernel may overwrite, the counterpart of
// the host executor's grown gather buffer (host_one_shot.cc): the CUDA executor owns one per
// communicator, grown in stream order (cudaMallocAsync/cudaFreeAsync on the operation's stream)
// so that a kernel still running on the old one keeps it.
inline constexpr int kCudaMaxOneShotRanks = kCudaMaxPeerRanks;
struct CudaOneShotArgs : CudaPeerCollArgs {
  void* gather;
  bool ownPreOp;  // as OneShotWork::ownPreOp: a ccRedOpCreatePreMulSum op (ExecColl::builtinOp < 0)
};

// Direct (direct_kernel.cu): one block runs the portable collectives/direct.h over the per-peer
// connections for its exchanges and the peers' buffers through CudaPlatform's peer-memory hooks
// (pointers as they are: ranks of one process; other processes need CUDA IPC, not wired).
// kind: AllGather, Broadcast, ReduceScatter or AllReduce; count as ExecColl::count; nranks
// 1..kCudaMaxDirectRanks. The descriptors and tokens live in the block's shared memory. chunk:
// nranks * directChunkBytes(nranks) bytes of device memory (ReduceScatter, AllReduce), the
// counterpart of the host executor's Direct scratch (host_direct.cc), which the CUDA executor owns
// like the one-shot's gather buffer (runDirect).
inline constexpr int kCudaMaxDirectRanks = kCudaMaxPeerRanks;
struct CudaDirectArgs : CudaPeerCollArgs {
  int32_t builtinOp;  // as ExecColl::builtinOp: what the ranks compare
  void* chunk;
};

}  // namespace collcomm::detail
