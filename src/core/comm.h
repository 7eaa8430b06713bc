// The communicator: everything one rank knows about its job, owned by the thread driving it.
// Only abortFlag, asyncError, busy, opsBusy, netOpsRunning, the bootstrap through adoptBootstrap/
// abortBootstrap, and the worker's busy() may be touched from other threads. A communicator with
// work on its worker (core/comm_worker.h) is the worker's until that work has finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collcomm.h"
#include "collectives/coll_list.h"
#include "core/comm_worker.h"
#include "device/executor.h"
#include "device/fifo.h"
#include "plan/plan_log.h"
#include "plan/step_stream_choice.h"
#include "plan/trees.h"
#include "plan/tuner.h"
#include "transport/transport.h"

namespace collcomm::detail {

inline constexpr uint32_t kCommMagic = 0xc011c033u;
inline constexpr uint32_t kCommDeadMagic = 0xdeadc033u;

// Effective configuration of a communicator (config struct, then COLLCOMM_*, then defaults).
struct CommConfig {
  int blocking = 1;
  int device = CC_DEVICE_HOST;
  std::string name;
  int timeoutSeconds = 300;
  int minChannels = 1;
  int maxChannels = 1;
  bool channelsGiven = false;  // by the config or COLLCOMM_MIN/MAX_NCHANNELS (else GPUs take their default)
};

// One ring: this rank's place on it and its connections to the neighbours.
struct Channel {
  int id = 0;
  std::vector<int> ringRanks;
  int ringPos = 0;
  SendConn send;
  RecvConn recv;
  std::unique_ptr<FifoMemory> sendMem;
  std::unique_ptr<FifoMemory> recvMem;
  const char* sendTransport = "";
  const char* recvTransport = "";
};

// Point-to-point connections to one peer, made on first use.
struct P2pPeer {
  bool sendReady = false;
  bool recvReady = false;
  SendConn send;
  RecvConn recv;
  std::unique_ptr<FifoMemory> sendMem;
  std::unique_ptr<FifoMemory> recvMem;
};

// One channel's tree connections (plan/trees.h): to the parent and up to two children, both ways.
struct TreeConns {
  P2pPeer parent;
  P2pPeer child[2];
};

// A reduction made by ccRedOpCreatePreMulSum.
struct UserRedOp {
  bool inUse = false;
  ccDataType_t dtype = ccFloat32;
  ccScalarResidence_t residence = ccScalarHostImmediate;
  uint64_t scalarBits = 0;        // host-immediate scalar, as the dtype's bits
  const void* scalarPtr = nullptr;  // ccScalarDevice: read when a host operation starts, by the kernel on a GPU
};

// A buffer registered by ccCommRegister; its address is the handle the user gets.
struct UserRegistration {
  void* buff = nullptr;
  size_t size = 0;
};

// Sizes of the connection FIFOs.
struct FifoSizes {
  FifoLayout ring;
  FifoLayout p2p;
  FifoLayout oneShot;  // per-peer connections of the one-shot AllReduce (small messages only)
};

// What every plan takes from the communicator (made on first use, once it is connected:
// core/op_plan.h) and the log of its distinct plans.
struct CommPlans {
  // Set (release) once shape and rings are made; made under shapeMu. Not std::call_once: its fast
  // path costs a library call and thread-local stores on every operation.
  std::atomic<bool> shapeReady{false};
  std::mutex shapeMu;
  PlanShape shape;
  std::vector<PlanRing> rings;
  std::vector<PlanTree> trees;
  PlanLog log;
};

}  // namespace collcomm::detail

struct ccComm {
  uint32_t magic = collcomm::detail::kCommMagic;
  int rank = 0;
  int nranks = 0;
  collcomm::detail::CommConfig config;
  std::unique_ptr<collcomm::detail::Bootstrap> bootstrap;
  std::vector<collcomm::detail::PeerInfo> peers;
  // Operations of this communicator running over NET (ProxyActivity); the proxy thread reads it to
  // skip this communicator's idle receive connections in most rounds. Declared before the
  // connections, so it outlives them (they leave the proxy when destroyed).
  std::atomic<int> netOpsRunning{0};
  std::vector<collcomm::detail::Channel> channels;
  std::vector<collcomm::detail::P2pPeer> p2p;
  // Connections of collectives that talk to every peer (one-shot AllReduce on > 2 ranks, Direct):
  // apart from p2p so that a user's ccSend/ccRecv can never be matched with a collective's transfer.
  std::vector<collcomm::detail::P2pPeer> collPeers;
  bool collPeersConnected = false;  // to every peer both ways (made on the first need)
  // What those collectives are handed (ExecColl::peers), per rank: collPeers' connections, or on
  // two ranks the ring's first channel, which joins them both ways already. Made at init.
  std::vector<collcomm::detail::ExecPeerConn> peerConns;
  // Each channel's tree (plan/trees.h), planned at init beside the rings; connected on the first
  // tree collective (core/tree_conns.h), then treeLinks (per channel) is what executors are handed.
  std::vector<collcomm::detail::RankTree> trees;
  std::vector<collcomm::detail::TreeConns> treeConns;
  std::vector<collcomm::detail::TreeLinks> treeLinks;
  bool treesConnected = false;
  // GPU communicators: the most of its ranks that one device runs (all its ranks are threads of one
  // process), the same on every rank, as the plans and channel budgets that depend on it must be.
  int mostRanksOnADevice = 1;
  // GPU: the least channel cap of every rank's executor (agreed at init): each rank plans a
  // collective's channels within it, and every rank of the collective must come to the same count.
  int gpuChannelCap = 0;
  // GPU communicators with one rank a device: their rings as the topology describes them, which the
  // planner's cost model prices, and the ranks in the order those rings take (core/gpu_model.h);
  // unset and empty elsewhere.
  std::optional<collcomm::detail::RingGraph> gpuModel;
  std::vector<int> gpuRingRanks;
  // Whether every rank can read every rank's memory, and how (transport/cma/cma_probe.h).
  collcomm::detail::DirectReach directReach = collcomm::detail::DirectReach::kNone;
  // What runs this communicator's operations (device/executor.h): the host executor, or on a GPU
  // communicator (config.device >= 0) the CUDA one. It uses the connections' FIFOs, so it is
  // declared after them and destroyed first. Null until init has made it.
  std::unique_ptr<collcomm::detail::Executor> executor;
  // The executor of a GPU communicator; null on host communicators (and before init made it).
  collcomm::detail::Executor* gpu() const { return config.device >= 0 ? executor.get() : nullptr; }
  std::vector<collcomm::detail::UserRedOp> userOps;
  // Live ccCommRegister registrations; each handle is the address of its entry.
  std::vector<std::unique_ptr<collcomm::detail::UserRegistration>> registrations;
  collcomm::detail::FifoSizes fifoSizes;
  collcomm::detail::TunerConfig tuner;
  // Far operations' FIFO steps streamed or not, by what each way took (plan/step_stream_choice.h).
  collcomm::detail::StepStreamChoice stepStreamChoice;
  // Plans: the communicator's shape as plan/ sees it, and the distinct plans logged (core/op_plan.h).
  collcomm::detail::CommPlans plans;

  int spinCount = 2000;
  // Waits' spin count once a connection is NET: 0 when this host's ranks and one proxy thread per
  // process outnumber their CPUs (a spinning executor holds the core its proxy needs).
  int netSpinCount = 2000;
  uint64_t bootstrapTagSeq = 0;  // control messages made after init (split) take fresh tags
  // ccCommShrink's control messages: per rank, how many shrinks this rank exchanged them with it
  // in, so that each shrink gets fresh tags although the ranks that call differ from one to the next.
  std::vector<uint32_t> shrinksWith;
  uint64_t secret[2] = {0, 0};   // the job's, from the unique id: NET connections present it

  std::atomic<uint32_t> abortFlag{0};
  std::atomic<bool> revoked{false};  // abortFlag was set by ccCommRevoke: the handle stays valid
  std::atomic<bool> ready{false};    // commSetup finished: bootstrap, connections and executor are made
  std::atomic<int> asyncError{ccSuccess};
  std::atomic<int> busy{0};  // API calls in flight (ccCommAbort waits for them to leave)
  // Operations in flight, from OpScope (api_scope.h): written by the operations' thread with
  // plain stores, read by ccCommAbort/ccCommDestroy after heavyFence.
  std::atomic<int> opsBusy{0};
  bool asymmetricFence = false;  // asymmetricFenceReady() at init
  bool usesNet = false;      // some connection is NET: operations wake the proxy thread
  bool finalized = false;
  std::string lastError;
  // The sentence of the first failure of a non-blocking communicator's queued work: written by the
  // worker, read by ccCommGetAsyncError once the worker is idle (core/async.h).
  std::string asyncMessage;
  // asyncMessage against a GPU failure recorded on one thread (pollGpuFailure) while another reads
  // it (ccCommGetAsyncError): the failure's code and its sentence are set together under it.
  std::mutex asyncMu;

  // What connections made now are set up with (the job's secret, the deadline, netOpsRunning).
  collcomm::detail::ConnSetup connSetup(collcomm::detail::Deadline deadline) const;
  // Marks every connection's own PeerState gone, naming the rank that caused it and why, so
  // peers stop waiting on this rank and can report the root cause.
  void leaveConnections(int culprit, collcomm::detail::GoneReason reason);
  // Host name of each rank (points into peers), for error sentences.
  std::vector<const char*> hostNames;

  // Installs the bootstrap that init made; fails (and aborts it) if ccCommAbort came first. With
  // abortBootstrap, lets ccCommAbort stop an init running on the worker.
  collcomm::detail::Status adoptBootstrap(std::unique_ptr<collcomm::detail::Bootstrap> made);
  // Any thread: makes the bootstrap's blocked and later calls return promptly. False if init has
  // not installed one yet (it is still joining the job, which cannot be interrupted from here).
  bool abortBootstrap();
  // Any thread: the bootstrap's calls return promptly while `on` (Bootstrap::interrupt/resume:
  // ccCommShrink's stop); false: they work again.
  void interruptBootstrap(bool on);
  // Whether the bootstrap exists and abortBootstrap has not ended it (ccCommRevoke, ccCommAbort).
  bool bootstrapUsable();

 private:
  std::mutex bootstrapMu_;         // bootstrap's installation against abortBootstrap
  bool bootstrapAborted_ = false;  // under bootstrapMu_

 public:
  // Made on first need (core/async.h, core/group.cc). Last member: destroyed (stopped and joined)
  // before anything its jobs use.
  std::unique_ptr<collcomm::detail::CommWorker> worker;
};
