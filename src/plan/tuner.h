// Per-operation choices: protocol and channel count for a collective of a given size.
// Control tier (runs once per operation, reads no environment: the communicator caches it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "collectives/coll_list.h"
#include "common/status.h"
#include "plan/cost_model.h"

namespace collcomm::detail {

// How a communicator's ranks can read each other's memory (decided at init, the same on every rank).
enum class DirectReach : int {
  kNone = 0,          // they cannot: no Direct algorithm
  kInProcess = 1,     // all are threads of one process: plain copies
  kCrossProcess = 2,  // some are other processes on this host: process_vm_readv
};

struct TunerConfig {
  int forcedProto = -1;        // -1: choose; else a Protocol value (COLLCOMM_PROTO)
  int forcedAlgo = -1;         // -1: choose; else an Algorithm value (COLLCOMM_ALGO)
  // Largest AllReduce run one-shot, in bytes one rank receives: message x (nranks - 1)
  // (COLLCOMM_ONESHOT_THRESHOLD).
  size_t oneShotThreshold = size_t{64} << 10;
  // The same for two ranks joined by NET, where the ring's second phase costs a network round
  // trip (the variable sets both).
  size_t oneShotNetThreshold = size_t{256} << 10;
  // Largest message, in bytes, sent with LL (COLLCOMM_LL_THRESHOLD; 0: LL only when forced); see
  // tuner.cc for why it is so small.
  size_t llThreshold = 16;
  // Smallest message, in bytes, whose results go to the user's buffer by streaming stores
  // (COLLCOMM_STREAM_THRESHOLD); below it the result stays in cache for the caller.
  // loadTunerConfig sets it from the last-level cache (defaultStreamThreshold).
  size_t streamThreshold = size_t{4} << 20;
  // The same for communicators with NET connections, whose operations are bound by the kernel's
  // work on every packet rather than by memory: twice as large (defaultNetStreamThreshold).
  size_t netStreamThreshold = size_t{8} << 20;
  // Smallest message, in bytes, whose Simple-protocol FIFO steps may be written with streaming
  // stores: they are while the next rank's core is far (device/host/core_distance.h); never over
  // NET, where this process's proxy reads them at once (COLLCOMM_STEP_STREAM_THRESHOLD); tuner.cc.
  size_t stepStreamThreshold = size_t{64} << 10;
  // COLLCOMM_STEP_STREAM=always: stream those steps whatever the distance (=never: threshold
  // SIZE_MAX).
  bool stepStreamAlways = false;
  // Smallest Simple step, in bytes, that a host executor sends over NET itself right after it
  // publishes it (HostWaitContext::sendNow) rather than in the round of its next wait
  // (COLLCOMM_SEND_NOW_THRESHOLD); tuner.cc.
  size_t sendNowThreshold = size_t{16} << 10;
  // The same for the Direct algorithm, whose working set (no FIFOs, one copy) stays in cache
  // longer (COLLCOMM_STREAM_THRESHOLD sets both).
  size_t directStreamThreshold = size_t{16} << 20;
  // Smallest message, in bytes as the perf tools count them (AllGather, ReduceScatter: every
  // rank's part), run by the single-copy Direct algorithm, per collective; SIZE_MAX: never unless
  // forced (COLLCOMM_DIRECT_THRESHOLD sets them all). One set for ranks that are threads of one
  // process (plain copies), one for ranks that read each other through process_vm_readv (a
  // syscall that pins every page it copies: several times slower than memcpy). Defaults and the
  // measurements behind them: tuner.cc.
  std::array<size_t, kNumCollKinds> directThreshold = defaultDirectThresholds(DirectReach::kInProcess);
  std::array<size_t, kNumCollKinds> directCmaThreshold = defaultDirectThresholds(DirectReach::kCrossProcess);

  // Half the last-level cache, and at least 4 MiB (also when the cache size is unknown: 0).
  static size_t defaultStreamThreshold(size_t lastLevelCacheBytes);
  // Over NET: the whole last-level cache, and at least 8 MiB.
  static size_t defaultNetStreamThreshold(size_t lastLevelCacheBytes);
  static std::array<size_t, kNumCollKinds> defaultDirectThresholds(DirectReach reach);
};

struct CollPlan {
  Protocol proto;
  Algorithm algo;
  int nChannels;
  bool streamResults;  // host: write results with streaming stores
  bool streamSteps;        // host: FIFO steps may be written with streaming stores (when far)
  bool streamStepsAlways;  // host: ... whatever the distance
};

// Reads COLLCOMM_PROTO / COLLCOMM_ALGO and the thresholds; rejects unknown names.
Status loadTunerConfig(TunerConfig* out);

// For a communicator whose host has more ranks than CPUs to run them (core/peer_info.h
// hostOversubscribed): the Direct thresholds measured that way, unless COLLCOMM_DIRECT_THRESHOLD
// set them (tuner.cc).
void tuneForOversubscribedHost(TunerConfig* cfg);

// reach: whether (and how) the communicator can run Direct; overNet: some of this rank's
// connections are NET (not the same on every rank: it steers only what stays local, such as
// streaming, and two ranks' one-shot); nHosts: the hosts the ranks are on (every rank counts alike:
// above one, AllReduce takes the host model's argmin over NET, plan/host_model.h); simpleStepBytes
// and llStepBytes: the ring's step payloads (PlanShape's, the same on every rank; 0: unknown), with
// which the model counts the steps a slice takes.
CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels,
                        DirectReach reach = DirectReach::kNone, bool overNet = false, int nHosts = 1,
                        size_t simpleStepBytes = 0, size_t llStepBytes = 0);

// A GPU communicator's collective: ring (OneShot for small two-rank AllReduce, and on any number of
// ranks when forced), channels growing with the size up to maxChannels (what the device holds at
// once). Where ranks share a device (sharedDevice: the same on every rank) the choices are the ones
// measured there, on an H200: Simple at every size. With one rank per device they are not yet
// measured: with `model` (the communicator's rings as the topology describes them, plan/
// ring_channels.h) the cost model's argmin of Ring and Tree, LL and Simple and the channel count
// (OneShot for a small two-rank AllReduce stays: the model does not know it); without, LL for small
// messages, NCCL's orders of magnitude. COLLCOMM_PROTO and COLLCOMM_ALGO (Ring, OneShot, Tree, and
// Direct where `reach` says the ranks read each other's buffers) force choices as on the host.
// tuner.cc says where each number comes from.
inline constexpr int kGpuDefaultChannels = 32;  // rings a GPU communicator connects unless told
CollPlan planGpuCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int maxChannels,
                           bool sharedDevice, const RingGraph* model = nullptr, DirectReach reach = DirectReach::kNone);

// The rings a GPU communicator connects: kGpuDefaultChannels, within COLLCOMM_MIN_NCHANNELS and
// COLLCOMM_MAX_NCHANNELS (or the config's) when the user gave either (channelsGiven).
inline int gpuChannelsToConnect(bool channelsGiven, int minChannels, int maxChannels) {
  if (!channelsGiven) return kGpuDefaultChannels;
  return kGpuDefaultChannels < minChannels   ? minChannels
         : kGpuDefaultChannels > maxChannels ? maxChannels
                                             : kGpuDefaultChannels;
}

// The most ranks that the CUDA kernels talking to every peer (the one-shot AllReduce beyond two
// ranks, Direct) take: their per-peer table travels in the launch (kCudaMaxPeerRanks, which the
// CUDA executor asserts is this). Forcing either on more ranks leaves the choice to the planner.
inline constexpr int kGpuMaxPeerRanks = 16;

// Whether `algo` talks to every peer over per-peer connections (Direct; OneShot on more than two
// ranks) rather than along the channels' rings.
inline bool talksToEveryPeer(Algorithm algo, int nranks) {
  return algo == Algorithm::kDirect || (algo == Algorithm::kOneShot && nranks > 2);
}

// Whether the Direct algorithm exists for `kind`.
bool hasDirect(CollKind kind);

}  // namespace collcomm::detail
