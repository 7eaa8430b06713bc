// The CUDA executor (device/executor.h): a GPU communicator's channels mirrored into device
// memory, its abort word and kernel status in mapped host memory, and one ring-kernel launch per
// collective or per run of a group's collectives that one kernel carries (one point-to-point kernel
// per batch of transfers; the one-shot or tree kernel where the plan says so) on the caller's
// stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "collectives/direct.h"
#include "common/log.h"
#include "common/params.h"
#include "common/process_watch.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_launch.h"
#include "device/cuda/fused_launch.h"
#include "device/cuda/net_launch_watch.h"
#include "device/executor.h"
#include "device/group_batch.h"
#include "plan/tuner.h"
#include "topo/system.h"

namespace collcomm::detail {
namespace {

static_assert(kCudaMaxPeerRanks == kGpuMaxPeerRanks, "the planner's bound on the per-peer kernels' ranks");

// One block per channel, this many threads: the kernels' __launch_bounds__.
constexpr int kThreads = kCudaMaxThreads;

// Ranks sharing a device each launch on their own stream, and CUDA feeds streams to the GPU through
// CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless set, 32 at most). Where two ranks' streams
// share a queue, a rank's next kernel, waiting there for its own previous one, holds back the peer
// kernel that previous one spins on, until the timeout: on an H200, 8 ranks' back-to-back 8 B
// allreduce stalled in 9 of 9 runs with 1 queue, 2 of 10 with 8 and 2 of 30 with 32
// (docs/gpu.md, "Ranks sharing a GPU"). Said once per process.
void warnSharedDeviceQueues(int device, int ranksOnDevice) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const char* queues = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    CC_WARN(
        "up to %d ranks share CUDA device %d, each launching on its own stream through CUDA's hardware queues "
        "(CUDA_DEVICE_MAX_CONNECTIONS=%s): where two ranks' streams share a queue, their back-to-back operations "
        "can hold each other back until the timeout. Set CUDA_DEVICE_MAX_CONNECTIONS=32 before CUDA starts, or "
        "give each rank its own GPU (docs/gpu.md, \"Ranks sharing a GPU\")",
        ranksOnDevice, device, queues != nullptr ? queues : "unset, so 8");
  });
}

// Written by the host, read by the kernels (abortFlag), and the other way round (status): in
// pinned host memory mapped into the device's address space, so neither side waits on a copy.
struct MappedWords {
  uint32_t abortFlag;
  CudaKernelStatus status;
};

class CudaExecutor final : public Executor {
 public:
  ~CudaExecutor() override {
    peerProcesses_.reset();  // its thread writes exitedWords_
    ScopedDevice on(device_);
    if (deviceConns_ != nullptr) cudaFree(deviceConns_);
    for (auto& [host, copy] : p2pMirrors_) cudaFree(copy);
    for (Scratch* scratch : {&gather_, &directChunk_})
      if (scratch->ptr != nullptr) cudaFree(scratch->ptr);
    if (orderEvent_ != nullptr) cudaEventDestroy(orderEvent_);
    if (ctrlStream_ != nullptr) cudaStreamDestroy(ctrlStream_);
    if (mapped_ != nullptr) cudaFreeHost(mapped_);
    if (exitedWords_ != nullptr) cudaFreeHost(exitedWords_);
  }

  Status init(const ExecSetup& s) {
    device_ = s.device;
    rank_ = s.rank;
    nranks_ = s.nranks;
    timeoutNs_ = static_cast<uint64_t>(s.timeoutSeconds) * 1000000000ull;
    onePoller_ = paramInt(Param::kGpuPollers) != 0;
    groupLaunch_ = paramInt(Param::kGpuGroupLaunch) != 0;
    maxTransfers_ = std::min(static_cast<size_t>(kCudaMaxP2pTransfers), s.maxTransfersPerRun);
    ScopedDevice on(device_);
    int blocksPerSm = 0, sms = 0;
    CC_CHECK(cudaPrepareKernels(kThreads, &blocksPerSm));
    CC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    const int ranksOnDevice = std::max(1, s.mostRanksOnADevice);
    sharesDevice_ = ranksOnDevice > 1;
    if (sharesDevice_) warnSharedDeviceQueues(device_, ranksOnDevice);
    maxChannels_ = std::min<int>({kCudaMaxChannels, static_cast<int>(s.channels.size()),
                                  blocksPerSm * sms / ranksOnDevice});
    if (maxChannels_ < 1 && nranks_ > 1)
      return CC_ERROR(Status::kInvalidUsage,
                      "rank %d: up to %d ranks of this communicator share one CUDA device, and device %d holds %d "
                      "blocks of the ring kernel at once (%d SMs x %d): their kernels could not all run together; "
                      "use fewer ranks per GPU",
                      rank_, ranksOnDevice, device_, blocksPerSm * sms, sms, blocksPerSm);
    maxChannels_ = std::max(maxChannels_, 1);
    // A fused launch holds every member's blocks: a member takes its share of them (and the ranks
    // agree at init on the least cap of all, core's agreeGpuChannels).
    if (paramInt(Param::kGpuFusedLaunch) != 0 && s.deviceMates.size() > 1) {
      CC_CHECK(fused_.join(s, rank_, device_));
      if (fused_.joined()) maxChannels_ = std::max(1, std::min(maxChannels_, kCudaMaxChannels / ranksOnDevice));
    }
    CC_CUDA_CHECK(cudaStreamCreateWithFlags(&ctrlStream_, cudaStreamNonBlocking));
    CC_CUDA_CHECK(cudaEventCreateWithFlags(&orderEvent_, cudaEventDisableTiming));
    CC_CUDA_CHECK(cudaHostAlloc(&mapped_, sizeof(MappedWords), cudaHostAllocMapped | cudaHostAllocPortable));
    memset(mapped_, 0, sizeof(MappedWords));
    void* devMapped = nullptr;
    CC_CUDA_CHECK(cudaHostGetDevicePointer(&devMapped, mapped_, 0));
    devAbort_ = &static_cast<MappedWords*>(devMapped)->abortFlag;
    devStatus_ = &static_cast<MappedWords*>(devMapped)->status;
    CC_CHECK(watchPeerProcesses(s.peers));
    if (s.netOpsRunning != nullptr) netLaunches_ = std::make_unique<NetLaunchWatch>(s.netOpsRunning, device_);
    return mirrorChannels(s.channels);
  }

  int maxChannels() const override { return maxChannels_; }
  size_t maxTransfersPerRun() const override { return maxTransfers_; }

  Status checkBuffer(const void* p, size_t bytes, const char* opName, const char* which) const override {
    if (bytes == 0) return kOk;
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, p);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it
      return CC_ERROR(Status::kInvalidArgument, "%s: %s %p on rank %d is not memory CUDA knows (%s)", opName, which,
                      p, rank_, cudaGetErrorString(err));
    }
    const bool usable = attr.type == cudaMemoryTypeManaged || attr.devicePointer != nullptr;
    if (!usable)
      return CC_ERROR(Status::kInvalidArgument,
                      "%s: %s %p on rank %d is host memory, but this communicator runs on CUDA device %d: pass "
                      "device memory (cudaMalloc), or mapped/managed memory",
                      opName, which, p, rank_, device_);
    if (attr.type == cudaMemoryTypeDevice && attr.device != device_) {
      int can = 0;
      (void)cudaDeviceCanAccessPeer(&can, device_, attr.device);
      if (can == 0)
        return CC_ERROR(Status::kInvalidArgument,
                        "%s: %s %p on rank %d lives on CUDA device %d, which device %d (this communicator's) cannot "
                        "reach",
                        opName, which, p, rank_, attr.device, device_);
    }
    return kOk;
  }

  Status run(const ExecColl& c, const ExecOp& op) override {
    CC_CHECK(checkNoEarlierFailure(collName(c.kind)));
    return tracedLaunch(collName(c.kind), [&] {
      return c.algo == Algorithm::kDirect                   ? runDirect(c, op)
             : c.algo == Algorithm::kOneShot && nranks_ > 2 ? runOneShot(c, op)
             : c.algo == Algorithm::kTree && nranks_ > 1    ? runTree(c, op)
                                                            : runRing(c, op);
    });
  }

  // Every collective but one-shot and tree AllReduce: a block per channel on the channels' rings.
  Status runRing(const ExecColl& c, const ExecOp& op) {
    auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
    CudaCollArgs a{};
    static_cast<CollWork&>(a) = collWorkOf(c, nranks_);
    static_cast<CudaWaitArgs&>(a) = waitArgs();
    a.nChannels = std::clamp(c.nChannels, 1, maxChannels_);
    fillRingChannels(&a);
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);
    CC_CHECK(orderAfterLastLaunch(stream));
    CC_CHECK(fused_.joined() ? fused_.launch(a, stream, timeoutNs_) : cudaLaunchCollective(a, stream));
    CC_CHECK(launched(stream, op));
    return kOk;
  }

  // a's first nChannels channels: this rank's connections and place on each channel's ring.
  void fillRingChannels(CudaCollArgs* a) const {
    for (int ch = 0; ch < a->nChannels; ++ch)
      a->channels[ch] =
          CudaChannelArgs{deviceSend() + ch, deviceRecv() + ch, deviceRing() + ch * nranks_, ringPos_[ch], 0, ch};
  }

  // A group's collectives: those that one ring kernel carries together (ringGroupEnd) as one
  // launch, the others each as run() would. Not with the fused launch, whose rounds pair one
  // collective of every member.
  Status runGroup(const ExecColl* colls, size_t n, const ExecOp& op) override {
    for (size_t i = 0; i < n;) {
      const size_t end = groupLaunch_ && !fused_.joined()
                             ? ringGroupEnd(colls, i, n, nranks_, static_cast<size_t>(kCudaMaxGroupWorks))
                             : i + 1;
      CC_CHECK(end - i == 1 ? run(colls[i], op) : runRingGroup(colls + i, end - i, op));
      i = end;
    }
    return kOk;
  }

  // 2..kCudaMaxGroupWorks collectives of one ring kernel (ringGroupEnd) as one launch: block c runs
  // channel c's share of each work that has a channel c, in order.
  Status runRingGroup(const ExecColl* colls, size_t n, const ExecOp& op) {
    const char* name = collName(colls[0].kind);
    CC_CHECK(checkNoEarlierFailure(name));
    return tracedLaunch(name, [&] {
      auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
      CudaCollArgs a{};
      static_cast<CollWork&>(a) = collWorkOf(colls[0], nranks_);
      static_cast<CudaWaitArgs&>(a) = waitArgs();
      a.nWorks = static_cast<int>(n);
      a.nChannels = 1;
      for (size_t i = 0; i < n; ++i) {
        const ExecColl& c = colls[i];
        const int channels = std::clamp(c.nChannels, 1, maxChannels_);
        a.works[i] = CudaGroupWork{c.sendbuff, c.recvbuff, c.count, c.op, c.root, channels, c.algo};
        a.nChannels = std::max(a.nChannels, channels);
      }
      fillRingChannels(&a);
      ScopedDevice on(device_);
      std::lock_guard<std::mutex> lock(launchMu_);
      CC_CHECK(orderAfterLastLaunch(stream));
      CC_CHECK(cudaLaunchCollective(a, stream));
      CC_CHECK(launched(stream, op));
      return kOk;
    });
  }

  // What the one-block kernels over per-peer connections (one-shot, Direct) share: the work, the
  // waits, this rank, and device copies of its connections to every peer. Called under launchMu_.
  Status fillPeerArgs(const ExecColl& c, CudaPeerCollArgs* a) {
    static_cast<CollWork&>(*a) = collWorkOf(c, nranks_);
    static_cast<CudaWaitArgs&>(*a) = waitArgs();
    a->rank = rank_;
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) continue;
      CC_CHECK(mirrored(c.peers[p].send, &a->peers[p].send));
      CC_CHECK(mirrored(c.peers[p].recv, &a->peers[p].recv));
    }
    return kOk;
  }

  // AllReduce one-shot on more than two ranks (one_shot_kernel.cu): one block gathers every peer's
  // input over the per-peer connections core made (c.peers) into the gather buffer and reduces in
  // rank order.
  Status runOneShot(const ExecColl& c, const ExecOp& op) {
    if (nranks_ > kCudaMaxOneShotRanks || c.peers == nullptr)
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d of %d: the one-shot kernel runs on at most %d ranks, over the per-peer "
                      "connections core makes first",
                      collName(c.kind), rank_, nranks_, kCudaMaxOneShotRanks);
    auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
    CudaOneShotArgs a{};
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);
    CC_CHECK(fillPeerArgs(c, &a));
    CC_CHECK(orderAfterLastLaunch(stream));
    CC_CHECK(growScratch(&gather_, static_cast<size_t>(nranks_) * c.count * dtypeSize(c.dtype), stream));
    a.gather = gather_.ptr;
    a.ownPreOp = c.builtinOp < 0;
    CC_CHECK(cudaLaunchOneShot(a, stream));
    CC_CHECK(launched(stream, op));
    return kOk;
  }

  // Direct (direct_kernel.cu): one block sends every peer a descriptor of its call over the per-peer
  // connections core made (c.peers; on two ranks the ring channel's, whose device copies the ring
  // kernels share), then reads the peers' buffers through their pointers and reduces in rank order.
  // The planner takes it only when forced and where every rank is on this device (core/init.cc).
  Status runDirect(const ExecColl& c, const ExecOp& op) {
    if (nranks_ < 2 || nranks_ > kCudaMaxDirectRanks || c.peers == nullptr || !directRuns(c.kind))
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d of %d: the Direct kernel runs AllGather, Broadcast, ReduceScatter and AllReduce "
                      "on 2 to %d ranks, over the per-peer connections core makes first",
                      collName(c.kind), rank_, nranks_, kCudaMaxDirectRanks);
    auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
    CudaDirectArgs a{};
    a.builtinOp = c.builtinOp;
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);
    CC_CHECK(fillPeerArgs(c, &a));
    CC_CHECK(orderAfterLastLaunch(stream));
    if (collReduces(c.kind)) {
      CC_CHECK(growScratch(&directChunk_, static_cast<size_t>(nranks_) * directChunkBytes(nranks_), stream));
      a.chunk = directChunk_.ptr;
    }
    CC_CHECK(cudaLaunchDirect(a, stream));
    CC_CHECK(launched(stream, op));
    return kOk;
  }

  // AllReduce on the channels' trees (tree_kernel.cuh): a block per channel over device copies of
  // the tree connections core made on the communicator's first tree collective (c.trees), made
  // here on their first use (mirrored) and kept with the links that point at them (devTrees_).
  Status runTree(const ExecColl& c, const ExecOp& op) {
    if (c.trees == nullptr)
      return CC_ERROR(Status::kInternalError, "%s on rank %d: a tree plan without the channels' tree connections",
                      collName(c.kind), rank_);
    auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
    CudaTreeArgs a{};
    static_cast<CollWork&>(a) = collWorkOf(c, nranks_);
    static_cast<CudaWaitArgs&>(a) = waitArgs();
    a.rank = rank_;
    a.nChannels = std::clamp(c.nChannels, 1, maxChannels_);
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);
    if (c.trees != devTreesOf_ || a.nChannels > devTreeChannels_) {
      for (int ch = 0; ch < a.nChannels; ++ch) {
        const TreeLinks& host = c.trees[ch];
        TreeLinks& dev = devTrees_[ch];
        dev = TreeLinks{};
        if (host.toParent != nullptr) CC_CHECK(mirrored(host.toParent, &dev.toParent));
        if (host.fromParent != nullptr) CC_CHECK(mirrored(host.fromParent, &dev.fromParent));
        for (int k = 0; k < 2; ++k) {
          if (host.toChild[k] != nullptr) CC_CHECK(mirrored(host.toChild[k], &dev.toChild[k]));
          if (host.fromChild[k] != nullptr) CC_CHECK(mirrored(host.fromChild[k], &dev.fromChild[k]));
        }
      }
      devTreesOf_ = c.trees;
      devTreeChannels_ = a.nChannels;
    }
    std::copy(devTrees_.begin(), devTrees_.begin() + a.nChannels, a.trees);
    CC_CHECK(orderAfterLastLaunch(stream));
    CC_CHECK(cudaLaunchTree(a, stream));
    CC_CHECK(launched(stream, op));
    return kOk;
  }

  // A kernel's scratch in device memory (the one-shot's gather buffer, Direct's reduction chunk),
  // grown on first need and kept.
  struct Scratch {
    void* ptr = nullptr;
    size_t bytes = 0;
  };

  // `s` holds at least `bytes`. Grown in stream order, after the launches already ordered before
  // `stream` (orderAfterLastLaunch): a kernel still running on the old buffer keeps it, and no call
  // waits for the device, where a peer's kernel may be spinning on this rank. Called under launchMu_.
  static Status growScratch(Scratch* s, size_t bytes, cudaStream_t stream) {
    if (bytes <= s->bytes) return kOk;
    // Grown in a capture, the buffer would be the graph's own allocation (freed with it, and absent
    // until its first replay) while later operations outside the graph used it too.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    CC_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone)
      return CC_ERROR(Status::kInvalidUsage,
                      "this collective needs %zu bytes of device scratch (the one-shot AllReduce's gather buffer or "
                      "Direct's reduction chunk) where the communicator has %zu, and the stream is being captured "
                      "into a CUDA graph, which cannot grow it: run one such collective of this size before the "
                      "capture",
                      bytes, s->bytes);
    if (s->ptr != nullptr) CC_CUDA_CHECK(cudaFreeAsync(s->ptr, stream));
    s->ptr = nullptr;
    s->bytes = 0;
    CC_CUDA_CHECK(cudaMallocAsync(&s->ptr, bytes, stream));
    s->bytes = bytes;
    return kOk;
  }

  // One kernel moves the whole batch, so that every send and receive progresses at once (split
  // into launches that run one after another, a batch could wait on a peer's later launch).
  Status runP2p(ExecTransfer* transfers, size_t n, const ExecOp& op) override {
    CC_CHECK(checkNoEarlierFailure(op.name));
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);
    // Every connection is mirrored before anything can refuse the batch, so that leave() reaches
    // them all: a peer whose kernel waits on one of them then learns this rank will not come.
    for (size_t i = 0; i < n; ++i) {
      ExecTransfer& t = transfers[i];
      if (t.peer == rank_ || t.bytes == 0) continue;
      if (t.isSend) CC_CHECK(mirrored(t.send, &t.send));
      else CC_CHECK(mirrored(t.recv, &t.recv));
    }
    if (n > maxTransfers_)
      return CC_ERROR(Status::kInternalError,
                      "%s on rank %d: a batch of %zu point-to-point transfers; one kernel on a GPU communicator moves "
                      "at most %zu, and core runs larger batches in rounds (core/p2p_rounds.h)",
                      op.name, rank_, n, maxTransfers_);
    auto* stream = reinterpret_cast<cudaStream_t>(op.stream);
    CudaP2pArgs a{};
    static_cast<CudaWaitArgs&>(a) = waitArgs();
    a.self = rank_;
    a.nTransfers = static_cast<int>(n);
    std::copy(transfers, transfers + n, a.transfers);
    CC_CHECK(orderAfterLastLaunch(stream));
    CC_CHECK(tracedLaunch(op.name, [&] { return cudaLaunchP2p(a, stream); }));
    CC_CHECK(launched(stream, op));
    return kOk;
  }

  // COLLCOMM_DEBUG=TRACE (subsystem COLL): each launch when asked for and when CUDA has taken it,
  // on the steady clock, so that a peer's timeout can be matched with whether and when this rank
  // launched (ranks sharing an H200 have stalled in their first operations: docs/gpu.md).
  template <class Launch>
  Status tracedLaunch(const char* what, Launch&& launch) {
    launches_.fetch_add(1, std::memory_order_relaxed);
    traceLaunch(what, "asked for");
    const Status s = launch();
    traceLaunch(what, isOk(s) ? "taken by CUDA" : "refused");
    return s;
  }
  void traceLaunch(const char* what, const char* stage) const {
    CC_TRACE(kSubsysColl, "rank %d: launch %llu (%s) %s at %.6f s", rank_,
             static_cast<unsigned long long>(launches_.load(std::memory_order_relaxed)), what, stage,
             std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count());
  }

  Status failure(const char* const* hostNames, std::string* message) const override {
    const CudaKernelStatus st = snapshotStatus();
    if (st.code == ccSuccess) return kOk;
    const Status s = cudaKernelResult(st, "a collective", rank_);
    *message = threadLastError();
    if (st.peerRank >= 0 && st.peerRank < nranks_ && hostNames != nullptr) {
      *message += " (rank ";
      *message += std::to_string(st.peerRank);
      *message += " is on host ";
      *message += hostNames[st.peerRank];
      *message += ")";
    }
    if (sharesDevice_ && static_cast<CudaFailReason>(st.reason) == CudaFailReason::kTimeout)
      *message += "; ranks sharing a GPU can hold each other back in CUDA's hardware queues (see the warning at init)";
    return s;
  }

  void abort() override {
    __atomic_store_n(&mappedWords().abortFlag, 1u, __ATOMIC_RELEASE);
    fused_.abort();
  }
  bool launchesWithOthers() const override { return fused_.joined(); }
  // Nothing gauges a GPU peer's distance, and GPU plans never stream steps.
  bool receiversFindFar(int) const override { return false; }

  void leave(int culprit, GoneReason reason) override {
    // The state words live in device memory: written by the copy engine on a stream of our own,
    // which runs beside kernels still spinning (a blocking copy would wait for them).
    ScopedDevice on(device_);
    std::lock_guard<std::mutex> lock(launchMu_);  // runP2p adds to ownStates_
    // Every word is tried, whatever one failed (its peer then waits out its deadline, the others
    // need not); a word in host memory (NET's FIFOs) is copied too, so the kind is CUDA's to tell.
    const uint32_t gone = goneState(culprit, reason);
    for (uint32_t* word : ownStates_) {
      if (cudaMemcpyAsync(word, &gone, sizeof(gone), cudaMemcpyDefault, ctrlStream_) == cudaSuccess)
        (void)cudaStreamSynchronize(ctrlStream_);  // `gone` is on this stack
      (void)cudaGetLastError();
    }
  }

 private:
  MappedWords& mappedWords() const { return *static_cast<MappedWords*>(mapped_); }

  // Peers in other processes of this machine: a kernel waiting on one that died would learn it only
  // at its deadline, so a watch looks at their /proc entries as often as the host executor's waits
  // do (kProcessCheckPeriod) and marks each one gone in a word of its own (CudaWaitArgs::peerExited):
  // the waits on that rank then fail naming it, and the others go on, as a peer may exit cleanly
  // once its part is done.
  Status watchPeerProcesses(const std::vector<ExecPeer>& peers) {
    std::vector<ProcessWatch::Watched> others;
    for (int r = 0; r < static_cast<int>(peers.size()); ++r)
      if (!peers[r].sameProcess && peers[r].sameMachine && peers[r].pid > 0) others.push_back({r, peers[r].pid});
    if (others.empty()) return kOk;
    const size_t bytes = peers.size() * sizeof(uint32_t);
    CC_CUDA_CHECK(cudaHostAlloc(&exitedWords_, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(exitedWords_, 0, bytes);
    void* dev = nullptr;
    CC_CUDA_CHECK(cudaHostGetDevicePointer(&dev, exitedWords_, 0));
    devExited_ = static_cast<uint32_t*>(dev);
    uint32_t* words = exitedWords_;
    peerProcesses_ = std::make_unique<ProcessWatch>(
        others, kProcessCheckPeriod, [words](int rank) { __atomic_store_n(&words[rank], 1u, __ATOMIC_RELEASE); });
    return kOk;
  }

  // What every launch's waits run under: the communicator's abort word, its peers' exit words,
  // deadline and status.
  CudaWaitArgs waitArgs() const {
    return CudaWaitArgs{kThreads, devAbort_, devExited_, timeoutNs_, devStatus_, onePoller_};
  }

  Status checkNoEarlierFailure(const char* opName) const {
    if (const uint32_t code = __atomic_load_n(&mappedWords().status.code, __ATOMIC_ACQUIRE); code != 0)
      return CC_ERROR(static_cast<Status>(code),
                      "%s on rank %d: an earlier kernel of this communicator failed; destroy or abort it", opName,
                      rank_);
    return kOk;
  }

  // The device copy of per-peer connection `host` (core's view of a point-to-point connection, of
  // a per-peer collective one, or of a tree one, made on first use): the kernels advance its step
  // counters there from one launch to the next, as the channels' (see mirrorChannels). Made from the host view the
  // first time the connection is used, which is before any kernel has moved a step on it. A ring
  // channel's connection (two ranks' per-peer ones are channel 0's) gets the copy mirrorChannels
  // made: two copies would each count steps.
  // Allocated in stream order: a peer's kernel may already spin on this rank, and a plain
  // cudaMalloc may order this rank's next launch behind it (CUDA's implicit synchronisation).
  // Called under launchMu_.
  template <class Conn>
  Status mirrored(Conn* host, Conn** device) {
    if (const auto channel = channelCopies_.find(host); channel != channelCopies_.end()) {
      *device = static_cast<Conn*>(channel->second);
      return kOk;
    }
    void*& copy = p2pMirrors_[host];
    if (copy == nullptr) {
      void* made = nullptr;
      CC_CUDA_CHECK(cudaMallocAsync(&made, sizeof(Conn), ctrlStream_));
      const cudaError_t err = cudaMemcpyAsync(made, host, sizeof(Conn), cudaMemcpyHostToDevice, ctrlStream_);
      if (err != cudaSuccess || cudaStreamSynchronize(ctrlStream_) != cudaSuccess) {
        (void)cudaFreeAsync(made, ctrlStream_);
        return cudaFailed(err != cudaSuccess ? err : cudaGetLastError(), "copying a connection to the device");
      }
      copy = made;
      ownStates_.push_back(host->peer.ownState);
    }
    *device = static_cast<Conn*>(copy);
    return kOk;
  }

  CudaKernelStatus snapshotStatus() const {
    CudaKernelStatus st;
    const volatile CudaKernelStatus* live = &mappedWords().status;
    st.code = live->code;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    st.reason = live->reason;
    st.channel = live->channel;
    st.peerRank = live->peerRank;
    st.got = live->got;
    st.expected = live->expected;
    for (size_t i = 0; i < sizeof(st.what); ++i) st.what[i] = live->what[i];
    st.what[sizeof(st.what) - 1] = '\0';
    return st;
  }

  SendConn* deviceSend() const { return static_cast<SendConn*>(deviceConns_); }
  RecvConn* deviceRecv() const { return reinterpret_cast<RecvConn*>(deviceSend() + nChannels_); }
  int* deviceRing() const { return reinterpret_cast<int*>(deviceRecv() + nChannels_); }

  // The kernels advance the connections' step counters in device memory, where they persist from
  // one launch to the next: copies of the host views made at init, never read back.
  Status mirrorChannels(const std::vector<ExecChannel>& channels) {
    nChannels_ = static_cast<int>(channels.size());
    const size_t bytes =
        nChannels_ * (sizeof(SendConn) + sizeof(RecvConn)) + static_cast<size_t>(nChannels_) * nranks_ * sizeof(int);
    std::vector<char> image(bytes);
    auto* send = reinterpret_cast<SendConn*>(image.data());
    auto* recv = reinterpret_cast<RecvConn*>(send + nChannels_);
    int* ring = reinterpret_cast<int*>(recv + nChannels_);
    for (int c = 0; c < nChannels_; ++c) {
      const ExecChannel& ch = channels[c];
      if (nranks_ > 1) {
        send[c] = *ch.send;
        recv[c] = *ch.recv;
        ownStates_.push_back(ch.send->peer.ownState);
        ownStates_.push_back(ch.recv->peer.ownState);
      }
      memcpy(ring + c * nranks_, ch.ringRanks, nranks_ * sizeof(int));
      ringPos_.push_back(ch.ringPos);
    }
    CC_CUDA_CHECK(cudaMalloc(&deviceConns_, bytes));
    CC_CUDA_CHECK(cudaMemcpyAsync(deviceConns_, image.data(), bytes, cudaMemcpyHostToDevice, ctrlStream_));
    CC_CUDA_CHECK(cudaStreamSynchronize(ctrlStream_));
    for (int c = 0; c < nChannels_ && nranks_ > 1; ++c) {
      channelCopies_[channels[c].send] = deviceSend() + c;
      channelCopies_[channels[c].recv] = deviceRecv() + c;
    }
    return kOk;
  }

  // After each launch: the next one orders after it, and one that may use NET keeps the proxy
  // awake until it ends. Called under launchMu_.
  Status launched(cudaStream_t stream, const ExecOp& op) {
    lastStream_ = stream;
    return op.overNet && netLaunches_ != nullptr ? netLaunches_->launched(stream) : kOk;
  }

  // A communicator's kernels share its connections' step counters, so they must run one after the
  // other: the same stream orders them; a new stream first waits for the last launch's. Where
  // that cannot be expressed (a stream being captured into a graph waits for nothing outside it;
  // the last stream was destroyed since) the user's order is the order, as NCCL asks too.
  Status orderAfterLastLaunch(cudaStream_t stream) {
    if (!hasLaunched_ || stream == lastStream_) {
      hasLaunched_ = true;
      return kOk;
    }
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    CC_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
    if (capturing != cudaStreamCaptureStatusNone) return kOk;
    if (cudaEventRecord(orderEvent_, lastStream_) != cudaSuccess ||
        cudaStreamWaitEvent(stream, orderEvent_, 0) != cudaSuccess)
      (void)cudaGetLastError();  // not sticky
    return kOk;
  }

  int device_ = 0;
  int rank_ = 0;
  int nranks_ = 1;
  int nChannels_ = 0;
  int maxChannels_ = 1;
  size_t maxTransfers_ = kCudaMaxP2pTransfers;  // per point-to-point kernel (maxTransfersPerRun)
  bool sharesDevice_ = false;  // another rank of the communicator launches on this device (warnSharedDeviceQueues)
  bool onePoller_ = true;  // Simple waits polled by one thread per block (COLLCOMM_GPU_POLLERS=0: all)
  bool groupLaunch_ = true;  // a group's ring collectives as one launch (COLLCOMM_GPU_GROUP_LAUNCH=0: each)
  uint64_t timeoutNs_ = 0;
  void* mapped_ = nullptr;  // MappedWords, host address
  uint32_t* devAbort_ = nullptr;
  uint32_t* exitedWords_ = nullptr;  // CudaWaitArgs::peerExited, host address (null: no peer process to watch)
  uint32_t* devExited_ = nullptr;
  CudaKernelStatus* devStatus_ = nullptr;
  void* deviceConns_ = nullptr;  // SendConn[nChannels], RecvConn[nChannels], int[nChannels][nranks]
  std::vector<int> ringPos_;
  std::vector<uint32_t*> ownStates_;  // this rank's PeerState words, in device memory
  std::unordered_map<const void*, void*> p2pMirrors_;  // a per-peer or tree SendConn/RecvConn: its device copy
  // A ring channel's host SendConn/RecvConn: its copy in deviceConns_ (mirrorChannels), which
  // mirrored() hands out too (two ranks' per-peer connections are channel 0's).
  std::unordered_map<const void*, void*> channelCopies_;
  // The channels' tree links with device copies of their connections, for the trees at devTreesOf_
  // (the communicator's, connected once), made by runTree for its first devTreeChannels_ channels.
  std::array<TreeLinks, kCudaMaxChannels> devTrees_{};
  const TreeLinks* devTreesOf_ = nullptr;
  int devTreeChannels_ = 0;
  Scratch gather_;       // the one-shot's gather buffer
  Scratch directChunk_;  // Direct's reduction chunk (DirectWork::chunk)
  cudaStream_t ctrlStream_ = nullptr;
  cudaEvent_t orderEvent_ = nullptr;
  FusedLaunch fused_;  // where ranks sharing this device launch as one (COLLCOMM_GPU_FUSED_LAUNCH)
  std::unique_ptr<ProcessWatch> peerProcesses_;  // watchPeerProcesses
  std::unique_ptr<NetLaunchWatch> netLaunches_;  // launches over NET, until they end (launched)
  std::mutex launchMu_;
  cudaStream_t lastStream_ = nullptr;
  bool hasLaunched_ = false;
  std::atomic<uint64_t> launches_{0};  // launches asked for (traceLaunch)
};

}  // namespace

Status checkCudaDevice(int device, const char* what) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kInvalidUsage, "%s = %d asks for CUDA device %d, but CUDA has no usable device here (%s)",
                    what, device, device, cudaGetErrorString(err));
  }
  if (device >= count)
    return CC_ERROR(Status::kInvalidArgument, "%s = %d: this process sees %d CUDA device(s) (0..%d)", what, device,
                    count, count - 1);
  return kOk;
}

Status cudaDeviceBusId(int device, int64_t* busId) {
  char text[32] = {};
  const cudaError_t err = cudaDeviceGetPCIBusId(text, sizeof(text), device);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kSystemError, "CUDA cannot tell the PCI bus id of device %d: %s", device,
                    cudaGetErrorString(err));
  }
  if (!parseBusId(text, busId))
    return CC_ERROR(Status::kSystemError, "CUDA gave device %d the PCI bus id \"%s\", which does not parse", device,
                    text);
  return kOk;
}

bool cudaDeviceUsesMps(int device) {
  int mps = 0;
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device) == cudaSuccess) return mps != 0;
  (void)cudaGetLastError();
  return false;
}

ScopedDevice::ScopedDevice(int device) {
  if (device < 0) return;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current == device) return;
  if (cudaSetDevice(device) == cudaSuccess) previous_ = current;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

Status makeCudaExecutor(const ExecSetup& setup, std::unique_ptr<Executor>* out) {
  auto exec = std::make_unique<CudaExecutor>();
  CC_CHECK(exec->init(setup));
  CC_INFO(kSubsysInit, "rank %d: CUDA executor on device %d, up to %d channel(s) per launch", setup.rank, setup.device,
          exec->maxChannels());
  *out = std::move(exec);
  return kOk;
}

}  // namespace collcomm::detail
