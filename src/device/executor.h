// The executor interface: what runs a communicator's planned operations. Core plans, checks and
// connects; it hands an executor one planned collective (ExecColl) or one batch of point-to-point
// transfers (ExecTransfer) whose connections it has already made, with a per-operation context
// (ExecOp), and the executor moves the bytes. The executor never calls back into core: what it
// needs from the communicator for its whole life (rank, channels, abort flag, host names, spin
// counts, NET progress hooks) it gets once, at construction (ExecSetup).
//
// Two executors implement it: the host executor (src/device/host, makeHostExecutor: a host thread
// plays the part of a thread block and an operation runs on the calling thread, blocking until it
// is done) and the CUDA executor (src/device/cuda, makeCudaExecutor: kernels enqueued on the
// caller's stream; a build without CUDA links cuda_absent.cc, whose makers refuse with a
// sentence). Core includes no file of either. This header includes no CUDA header and no host
// platform header.
//
// Where the two still differ (issue "one path"): point-to-point batches, the one-shot AllReduce on
// more than two ranks and Direct are portable (collectives/p2p.h, one_shot_all_reduce.h, direct.h)
// and their CUDA kernels compile, but only the host executor runs them yet. The CUDA executor
// refuses all three (core's checks and the planner stop such calls first).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "collectives/coll_work.h"
#include "common/deadline.h"
#include "common/status.h"
#include "device/fifo.h"
#include "device/op_arg.h"
#include "device/transfer.h"

namespace collcomm::detail {

// One ring channel as the executor sees it: the connections as made at init and this rank's place
// on the ring. The host executor advances the connections' step counters; the CUDA executor
// mirrors them into device memory once.
struct ExecChannel {
  SendConn* send;
  RecvConn* recv;
  const int* ringRanks;  // nranks entries
  int ringPos;
};

// One planned collective, as every executor takes it. The last fields are plan decisions that
// only the host executor reads so far; their defaults are what a plan without them means.
struct ExecColl {
  CollKind kind;
  Algorithm algo;
  Protocol proto;
  ccDataType_t dtype;
  RedOpSpec op;  // ignored by Broadcast and AllGather
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // elements of dtype per rank, as the API counts them
  int root;
  int nChannels;  // the first nChannels channels of the communicator
  // The call's ccRedOp_t when it is built in, else -1 (a ccRedOpCreatePreMulSum op, or a kind that
  // does not reduce): what ranks compare when they check each other's calls (Direct).
  int builtinOp = -1;
  bool streamResults = false;      // write results with streaming stores
  bool streamSteps = false;        // FIFO steps may stream (when the receiver finds this core far) ...
  bool streamStepsAlways = false;  // ... whatever the receiver finds
  // nranks entries (this rank's own unused), connected; set when algo talks to every peer
  // (Direct, or OneShot on more than two ranks), else null.
  const ExecPeerConn* peers = nullptr;
  // nChannels entries, connected; set when algo is Tree, else null.
  const TreeLinks* trees = nullptr;
};

// What collective c asks of one of nranks ranks, as every executor takes it (collectives/coll_work.h).
inline CollWork collWorkOf(const ExecColl& c, int nranks) {
  CollWork w{};
  w.kind = c.kind;
  w.algo = c.algo;
  w.proto = c.proto;
  w.dtype = c.dtype;
  w.op = c.op;
  w.sendbuff = c.sendbuff;
  w.recvbuff = c.recvbuff;
  w.count = c.count;
  w.root = c.root;
  w.nranks = nranks;
  w.nChannels = c.nChannels;
  return w;
}

// Why an operation failed, when a peer is to blame: filled by the executor, read by core to tell
// the other peers (see goneState in fifo.h).
struct ExecFailure {
  int culprit = -1;
  GoneReason reason = kGoneFailed;
};

// What one operation runs under, beside its plan.
struct ExecOp {
  const char* name = "operation";  // for error sentences (a collective's name, "send/recv group")
  ccStream_t stream = nullptr;     // device executors: the stream to enqueue on
  // Host: unset (never) means timeoutSeconds from the first wait that leaves its spin phase (a
  // clock read costs as much as a small operation); set when connecting counted too.
  Deadline deadline;
  ExecFailure* failure = nullptr;  // host: where to say who caused a failure (may be null)
  // The communicator has a NET connection: the host executor spins less and runs proxy rounds; the
  // CUDA executor keeps the proxy thread awake until the kernel has ended (net_launch_watch.h).
  bool overNet = false;
};

// One rank as the executor sees it: where its memory lives (Direct reads peers' buffers).
struct ExecPeer {
  int pid = 0;
  bool sameProcess = false;
  bool sameMachine = false;  // its pid names its process in this rank's /proc (samePidSpace)
};

// What an executor is made from (at the end of a communicator's init). The pointers stay valid
// for the executor's life (they point into the communicator, which outlives it).
struct ExecSetup {
  int device;
  int rank;
  int nranks;
  // The most of the communicator's ranks on one device (their kernels must run at once): each
  // rank's share of the device's blocks, the same on every rank so that their plans agree.
  int mostRanksOnADevice;
  // The communicator's ranks in this process on this rank's device, in rank order (this rank
  // among them), and an id every rank of the communicator shares: the CUDA executor's fused
  // launch joins them (device/launch_group.h).
  std::vector<int> deviceMates;
  uint64_t commId = 0;
  int timeoutSeconds;
  std::vector<ExecChannel> channels;
  // The communicator's count of operations running over NET (ProxyActivity), which a GPU
  // communicator's launches over NET hold until their kernels end.
  std::atomic<int>* netOpsRunning = nullptr;
  // Host executor only.
  const std::atomic<uint32_t>* abortFlag = nullptr;
  const char* const* hostNames = nullptr;  // per rank, for naming a root cause
  std::vector<ExecPeer> peers;             // per rank
  // The most transfers one runP2p may be handed (COLLCOMM_P2P_MAX_TRANSFERS; SIZE_MAX: none but
  // the executor's own, Executor::maxTransfersPerRun).
  size_t maxTransfersPerRun = SIZE_MAX;
  int spinCount = 2000;                    // polls before a wait starts yielding its core
  int netSpinCount = 2000;                 // ... when some connection is NET (ExecOp::overNet)
  // Nanoseconds a wait yields before it sleeps until its peer publishes (0: never; never over NET).
  int64_t parkAfterNs = 0;
  // Over NET: one round of the process's network progress on the waiting thread, true if it ran
  // one; and the process's network sends on the publishing thread, after a Simple step of at least
  // sendNowMinBytes (HostWaitContext says how waits use them).
  bool (*progress)() = nullptr;
  bool (*sendNow)() = nullptr;
  size_t sendNowMinBytes = 0;
};

// Every executor's operations. Control tier apart from run/runP2p, which are the data path: one
// virtual call per operation, no allocation on the host's ring path.
class Executor {
 public:
  virtual ~Executor() = default;

  // Channels one operation may use. CUDA: bounded so that the kernels of every rank sharing the
  // device fit on it at the same time (a rank's blocks wait for its peers' blocks).
  virtual int maxChannels() const = 0;
  // Whether this rank's collectives wait, on the calling thread, for other ranks of this process
  // to call theirs (the CUDA executor's fused launch): a thread that drives several such ranks must
  // then run each one's part of a group on a thread of its own (core/group.cc).
  virtual bool launchesWithOthers() const { return false; }
  // Transfers one runP2p takes at most (CUDA: its kernel's 32; host: none unless
  // ExecSetup::maxTransfersPerRun says); runP2p refuses a larger batch. Core runs AlltoAll, Gather
  // and Scatter beyond it in rounds (core/p2p_rounds.h).
  virtual size_t maxTransfersPerRun() const = 0;
  // A sentence unless [p, p + bytes) is memory the executor can read and write (CUDA: device
  // memory of this or a peer-accessible device, or managed/mapped memory; host: any). Control tier.
  virtual Status checkBuffer(const void* p, size_t bytes, const char* opName, const char* which) const = 0;
  // Runs one planned collective: the host executor on the calling thread, returning when it has
  // finished or failed (a failure's culprit in *op.failure); the CUDA executor enqueues it on
  // op.stream (NULL: the legacy default stream) and returns without waiting, its failures showing
  // in failure(). Operations of one communicator run in the order they were submitted.
  virtual Status run(const ExecColl& coll, const ExecOp& op) = 0;
  // Runs a group's collectives of this communicator in order, all on op.stream, as run does each
  // (the default). The CUDA executor launches those that one ring kernel can carry together as
  // one (device/group_batch.h). Stops at the first that fails.
  virtual Status runGroup(const ExecColl* colls, size_t n, const ExecOp& op) {
    for (size_t i = 0; i < n; ++i) CC_CHECK(run(colls[i], op));
    return kOk;
  }
  // Runs a batch of point-to-point transfers, all at once: the host executor to completion; the
  // CUDA executor enqueues one kernel (device/cuda/p2p_kernel.cu) on op.stream, as run does.
  // `transfers` is the executor's to update until it returns.
  virtual Status runP2p(ExecTransfer* transfers, size_t n, const ExecOp& op) = 0;
  // kOk while no enqueued operation of this communicator has failed; else the failure's code, with
  // its sentence (naming the peer rank and host) in *message. Any thread. The host executor's
  // failures are run's results, so it always says kOk.
  virtual Status failure(const char* const* hostNames, std::string* message) const = 0;
  // Makes running and later kernels of this communicator stop (ccCommAbort). Any thread. The host
  // executor's waits read ExecSetup::abortFlag instead.
  virtual void abort() = 0;
  // A tuning input of the plan's step-streaming choice (plan/step_stream_choice.h): whether the
  // next rank on any of the first nChannels rings finds this rank's core far (host executor: the
  // verdict its receivers keep, device/host/core_distance.h; false where nothing gauges it, CUDA).
  // Control tier: a relaxed load per channel, on the thread that runs the operations.
  virtual bool receiversFindFar(int nChannels) const = 0;
  // Tells the peers' kernels this rank will not come (ccCommAbort, ccCommDestroy), so they fail
  // fast instead of at their deadline. Control tier. Host connections' state words are host memory
  // that core marks itself (ccComm::leaveConnections); the host executor does nothing here.
  virtual void leave(int culprit, GoneReason reason) = 0;
};

// CUDA's per-thread default stream (cudaStreamPerThread, CU_STREAM_PER_THREAD: the handle 0x2)
// names the stream of whichever thread uses it: an operation that runs on another thread than its
// caller's (a non-blocking communicator's worker, a group's share on a worker, the last member of a
// fused launch) cannot be given it.
inline bool isPerThreadStream(ccStream_t s) { return reinterpret_cast<uintptr_t>(s) == 2; }

// A usable device argument: a CUDA ordinal this process can use (`what` names the argument).
Status checkCudaDevice(int device, const char* what);
// The PCI bus id of CUDA device `device` (topo/system.h's encoding), for finding it in the
// topology; an error with a sentence where CUDA cannot say (or the build has no CUDA).
Status cudaDeviceBusId(int device, int64_t* busId);
// Whether CUDA's MPS shares device `device` among processes (false where CUDA cannot say).
bool cudaDeviceUsesMps(int device);

// Makes this thread's current CUDA device `device` until the guard ends (init and launches run on
// whatever thread the user or the worker gives them).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

Status makeCudaExecutor(const ExecSetup& setup, std::unique_ptr<Executor>* out);

// The host executor. Also fixes, once per process, what the host data path measures about this
// machine: the clock that gauges a peer core's distance (core_distance.h) and the vector width of
// the element loops (simd_level.h, logged here rather than in the first operation).
Status makeHostExecutor(const ExecSetup& setup, std::unique_ptr<Executor>* out);

}  // namespace collcomm::detail
