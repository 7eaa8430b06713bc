// Per-operation choices: protocol, algorithm, and which writes stream past the cache. Each
// threshold below is the crossing point measured on the 2-vCPU development VM; the numbers, dates
// and commands are in docs/lab/planner.md.
// - Protocol: LL only below 16 B; above that the host LL path loses to Simple (a receiver polls a
//   line the sender is still filling).
// - Algorithm: one-shot AllReduce while a rank receives at most 64 KiB (one hand-off instead of
//   the ring's two; between threads Direct, below, takes over from 4 KiB); for two ranks over NET
//   up to 256 KiB, where the ring's second phase costs a network round trip (more ranks on few
//   cores lost with it, so they keep 64 KiB).
// - AllReduce on more than two ranks across hosts: the host model's argmin of Ring, OneShot and
//   Tree, Simple and LL, over NET (plan/host_model.h hostModelChoice; what is forced is kept, and
//   the LL rule above does not apply there); the thresholds stay where the model errs more than the
//   margins between the algorithms: within one host (even with its cache term it misses 4-32 KiB by
//   2-3x, and its choice measured 1.1-2.2x the fastest forced one at 4 KiB, 32 KiB and 4 MiB) and
//   for two ranks over NET (with the cache term its one-shot/ring crossing, 217 KiB, is near the
//   measured 256 KiB, but it errs up to 30% from 256 KiB up; not checked by planner_check.sh).
//   docs/planning.md.
// - Results stream past the cache from half the last-level cache up (at least 4 MiB): below that
//   the next operation finds them in cache. Over NET from the whole cache (at least 8 MiB): the
//   operation is bound by the kernel's per-packet work there, not by memory.
// - FIFO steps stream from 64 KiB only while the receiver finds the sender's core far
//   (device/host/core_distance.h); near, streaming them costs up to 2x. Which far phases it pays
//   in is learned per communicator (plan/step_stream_choice.h).
// - Over NET a Simple step of 16 KiB or more goes to the network as soon as it is published
//   (HostWaitContext::sendNow): it leaves while still in cache; smaller steps wait for the round
//   of the wait that follows, since a second lock round per step costs small messages.
// - Direct (single copy from the peers' buffers): between threads of one process from 16 KiB
//   (Broadcast and AllReduce from 4 KiB, or 64 and 16 KiB where the host's ranks outnumber its
//   CPUs: below), where a plain copy beats the ring's two and the one-shot's copy through a FIFO
//   (AllReduce too since 2026-11-28: with 11-23's 4 MiB the default took 1.4-1.8x Direct at 16-64 KiB in two runs
//   on two threads and 1.6-2.0x at 64 KiB on four; the ring still won 256 KiB that day by 1.2-1.4x,
//   Direct 11-27's calibration by 1.2x); between processes off unless
//   forced or COLLCOMM_DIRECT_THRESHOLD is set, because process_vm_readv copies slower than the
//   ring's two copies through a cached FIFO (even Broadcast at 16 MiB, where Direct wins out of
//   place but the ring in place: only the root knows the variant, every rank must choose alike,
//   and MPI_Bcast is in place). Direct results stream only from 16 MiB: no FIFOs in its working set.
//   Broadcast between threads: two threads took 0.36-0.55 us by Direct at 4-8 KiB against the
//   ring's 0.96-1.47 in four runs (2026-11-28; 1-2 KiB split between them), as each reader copies
//   once from the root's buffer instead of through a FIFO. Four threads on two CPUs lost with it up
//   to 32 KiB (16 KiB: 5.7-8.3 against the ring's 3.3-5.0 us) and won from 64 KiB (8.0-8.2 against
//   9.7-12.6): the root then waits for readers that take turns on the CPUs, so a host whose ranks
//   outnumber its CPUs keeps Direct Broadcast from 64 KiB (tuneForOversubscribedHost). Four
//   threads' AllGather and ReduceScatter won or tied with Direct from 16 KiB, so they keep it.
//   AllReduce between two threads (2026-11-28 14:25, one-shot and Direct alternated 15 times per
//   size): Direct was faster in 12 of 15 pairs at 4 KiB (median one-shot/Direct 1.47) and 14 of 15
//   at 8 KiB (1.37), a coin flip at 1-2 KiB (8 of 15 each), so it starts at 4 KiB; four threads on
//   two CPUs lost with it at 4 KiB (0 of 9, 0.63) and 8 KiB (2 of 9) and won at 16 KiB (8 of 9),
//   so there it keeps 16 KiB.
#include "plan/tuner.h"

#include <strings.h>

#include <algorithm>

#include <string>

#include "common/params.h"
#include "plan/host_model.h"
#include "topo/cpu_cache.h"

namespace collcomm::detail {

Status loadTunerConfig(TunerConfig* out) {
  TunerConfig cfg;
  const size_t llc = lastLevelCacheBytes();
  cfg.streamThreshold = TunerConfig::defaultStreamThreshold(llc);
  cfg.netStreamThreshold = TunerConfig::defaultNetStreamThreshold(llc);
  const std::string proto = paramStr(Param::kProto);
  if (!proto.empty()) {
    if (strcasecmp(proto.c_str(), "LL") == 0)
      cfg.forcedProto = static_cast<int>(Protocol::kLL);
    else if (strcasecmp(proto.c_str(), "Simple") == 0)
      cfg.forcedProto = static_cast<int>(Protocol::kSimple);
    else
      return CC_ERROR(Status::kInvalidArgument, "COLLCOMM_PROTO=%s is not a protocol (use Simple or LL)",
                      proto.c_str());
  }
  const std::string algo = paramStr(Param::kAlgo);
  if (!algo.empty()) {
    if (strcasecmp(algo.c_str(), "Ring") == 0)
      cfg.forcedAlgo = static_cast<int>(Algorithm::kRing);
    else if (strcasecmp(algo.c_str(), "OneShot") == 0)
      cfg.forcedAlgo = static_cast<int>(Algorithm::kOneShot);
    else if (strcasecmp(algo.c_str(), "Direct") == 0)
      cfg.forcedAlgo = static_cast<int>(Algorithm::kDirect);
    else if (strcasecmp(algo.c_str(), "Tree") == 0)
      cfg.forcedAlgo = static_cast<int>(Algorithm::kTree);
    else
      return CC_ERROR(Status::kInvalidArgument,
                      "COLLCOMM_ALGO=%s is not an algorithm this build has (use Ring, OneShot, Direct or Tree)",
                      algo.c_str());
  }
  const int64_t oneShot = paramInt(Param::kOneshotThreshold);
  if (oneShot >= 0) cfg.oneShotThreshold = cfg.oneShotNetThreshold = static_cast<size_t>(oneShot);
  const int64_t threshold = paramInt(Param::kLlThreshold);
  if (threshold >= 0) cfg.llThreshold = static_cast<size_t>(threshold);
  const int64_t stream = paramInt(Param::kStreamThreshold);
  if (stream >= 0)
    cfg.streamThreshold = cfg.netStreamThreshold = cfg.directStreamThreshold = static_cast<size_t>(stream);
  const int64_t sendNow = paramInt(Param::kSendNowThreshold);
  if (sendNow >= 0) cfg.sendNowThreshold = static_cast<size_t>(sendNow);
  const int64_t stepStream = paramInt(Param::kStepStreamThreshold);
  if (stepStream >= 0) cfg.stepStreamThreshold = static_cast<size_t>(stepStream);
  const std::string stepMode = paramStr(Param::kStepStream);
  if (strcasecmp(stepMode.c_str(), "always") == 0)
    cfg.stepStreamAlways = true;
  else if (strcasecmp(stepMode.c_str(), "never") == 0)
    cfg.stepStreamThreshold = SIZE_MAX;
  else if (!stepMode.empty() && strcasecmp(stepMode.c_str(), "auto") != 0)
    return CC_ERROR(Status::kInvalidArgument, "COLLCOMM_STEP_STREAM=%s is not a mode (use auto, always or never)",
                    stepMode.c_str());
  const int64_t direct = paramInt(Param::kDirectThreshold);
  if (direct >= 0)
    for (int k = 0; k < kNumCollKinds; ++k)
      if (hasDirect(static_cast<CollKind>(k)))
        cfg.directThreshold[k] = cfg.directCmaThreshold[k] = static_cast<size_t>(direct);
  *out = cfg;
  return kOk;
}

void tuneForOversubscribedHost(TunerConfig* cfg) {
  if (paramIsSet(Param::kDirectThreshold)) return;
  cfg->directThreshold[static_cast<int>(CollKind::kBroadcast)] = size_t{64} << 10;
  cfg->directThreshold[static_cast<int>(CollKind::kAllReduce)] = size_t{16} << 10;
}

bool hasDirect(CollKind kind) {
  return kind == CollKind::kAllGather || kind == CollKind::kBroadcast || kind == CollKind::kReduceScatter ||
         kind == CollKind::kAllReduce;
}

size_t TunerConfig::defaultStreamThreshold(size_t lastLevelCacheBytes) {
  return std::max(size_t{4} << 20, lastLevelCacheBytes / 2);
}

size_t TunerConfig::defaultNetStreamThreshold(size_t lastLevelCacheBytes) {
  return std::max(size_t{8} << 20, lastLevelCacheBytes);
}

std::array<size_t, kNumCollKinds> TunerConfig::defaultDirectThresholds(DirectReach reach) {
  std::array<size_t, kNumCollKinds> t;
  t.fill(SIZE_MAX);
  if (reach == DirectReach::kInProcess) {
    for (CollKind k : {CollKind::kAllGather, CollKind::kReduceScatter}) t[static_cast<int>(k)] = size_t{16} << 10;
    for (CollKind k : {CollKind::kBroadcast, CollKind::kAllReduce}) t[static_cast<int>(k)] = size_t{4} << 10;
  }
  // Across processes: off unless forced or set (the header comment: the windows of 2026-11-23
  // lost 2-3x by 2026-11-25).
  return t;
}

CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels,
                        DirectReach reach, bool overNet, int nHosts, size_t simpleStepBytes, size_t llStepBytes) {
  const bool streamSteps = !overNet && bytes >= cfg.stepStreamThreshold;
  const size_t streamFrom = overNet ? cfg.netStreamThreshold : cfg.streamThreshold;
  CollPlan plan{Protocol::kSimple, Algorithm::kRing, nChannels, bytes >= streamFrom, streamSteps,
                streamSteps && cfg.stepStreamAlways};
  // Direct, where the communicator can: forced, or from the collective's threshold. A forced
  // Direct the communicator cannot run leaves the choice to the rules below.
  if (reach != DirectReach::kNone && hasDirect(kind) && nranks >= 2) {
    const bool forced = cfg.forcedAlgo == static_cast<int>(Algorithm::kDirect);
    const size_t threshold = (reach == DirectReach::kInProcess ? cfg.directThreshold
                                                                : cfg.directCmaThreshold)[static_cast<int>(kind)];
    if (forced || (cfg.forcedAlgo < 0 && bytes >= threshold)) {
      plan.algo = Algorithm::kDirect;
      plan.streamResults = bytes >= cfg.directStreamThreshold;
      return plan;
    }
  }
  // OneShot and Tree exist for AllReduce; forced, they leave the other collectives on rings. On more
  // than two ranks each rank receives (n-1) inputs and reduces them all, so the threshold applies
  // to what one rank receives.
  if (cfg.forcedProto >= 0)
    plan.proto = static_cast<Protocol>(cfg.forcedProto);
  else if (cfg.llThreshold != 0 && bytes <= cfg.llThreshold)
    plan.proto = Protocol::kLL;
  if (kind == CollKind::kAllReduce && nranks >= 2) {
    const bool forcedHere = cfg.forcedAlgo >= 0 && cfg.forcedAlgo != static_cast<int>(Algorithm::kDirect);
    if (nHosts > 1 && nranks > 2) {
      const HostModelChoice m =
          hostModelChoice(kind, bytes, nranks, HostLinkClass::kNet, forcedHere ? cfg.forcedAlgo : -1, cfg.forcedProto,
                          HostStepBytes{simpleStepBytes, llStepBytes});
      plan.algo = m.algo;
      plan.proto = m.proto;
    } else if (forcedHere)
      plan.algo = static_cast<Algorithm>(cfg.forcedAlgo);
    else if (bytes * static_cast<size_t>(nranks - 1) <=
             (overNet && nranks == 2 ? cfg.oneShotNetThreshold : cfg.oneShotThreshold))
      plan.algo = Algorithm::kOneShot;
  }
  return plan;
}

}  // namespace collcomm::detail

namespace collcomm::detail {

// With one rank per device the thresholds are NCCL's orders of magnitude, not yet our
// measurements: LL (one flag per 4-byte word, no handshake per step) wins while a message is
// latency-bound, up to tens of KiB. Where ranks share a device they are measured (an H200, 2, 4
// and 8 ranks, AllReduce 8 B to 16 MiB with each choice forced, docs/lab/2026-11-27.md): Simple
// was within 5% of LL up to 8 KiB and ahead beyond (2 ranks 128 KiB: 12 us against 104; 8 ranks'
// LL at 512 KiB did not finish 60 operations in 20 s), and the two-rank one-shot beat the ring up
// to 128 KiB (12.3 against 14.9 us) and tied at 512 KiB. One channel moves about 256 KiB per step
// round, so a channel per 256 KiB keeps every block busy without making small messages wait on
// many blocks.
namespace {

// One rank per GPU with the communicator's rings described (RingGraph from the topology): the cost
// model's argmin over Ring and Tree, LL and Simple (collcomm has no LL128) and the channels the
// communicator connected, within what COLLCOMM_ALGO and COLLCOMM_PROTO force.
CollPlan planGpuByModel(const TunerConfig& cfg, CollKind kind, size_t bytes, int maxChannels, RingGraph graph) {
  graph.maxChannels = std::max(1, std::min(graph.maxChannels, maxChannels));
  ModelChoiceLimits limits;
  limits.allowLl128 = false;
  if (cfg.forcedAlgo == static_cast<int>(Algorithm::kTree) && modelHasAlgo(Algorithm::kTree, kind))
    limits.algo = static_cast<int>(Algorithm::kTree);
  else if (cfg.forcedAlgo >= 0)
    limits.algo = static_cast<int>(Algorithm::kRing);
  if (cfg.forcedProto >= 0)
    limits.proto =
        static_cast<int>(cfg.forcedProto == static_cast<int>(Protocol::kLL) ? ModelProto::kLL : ModelProto::kSimple);
  const ModelChoice c = chooseByModel(graph, kind, bytes, limits);
  return CollPlan{
      c.proto == ModelProto::kLL ? Protocol::kLL : Protocol::kSimple, c.algo, c.channels, false, false, false};
}

}  // namespace

CollPlan planGpuCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int maxChannels,
                           bool sharedDevice, const RingGraph* model, DirectReach reach) {
  constexpr size_t kLlMaxBytes = size_t{64} << 10;  // one rank per device only
  const size_t kOneShotMaxBytes = sharedDevice ? size_t{256} << 10 : size_t{64} << 10;
  constexpr size_t kBytesPerChannel = size_t{256} << 10;
  CollPlan plan{Protocol::kSimple, Algorithm::kRing, 1, false, false, false};
  // Direct (its own kernel: one block reads the peers' buffers, Simple steps for its exchanges) only
  // when forced and where the ranks can read each other's buffers; forced where they cannot, the
  // choice below, as on the host. It has not run on a GPU yet, so it is never the default.
  if (cfg.forcedAlgo == static_cast<int>(Algorithm::kDirect) && reach != DirectReach::kNone && hasDirect(kind) &&
      nranks >= 2 && nranks <= kGpuMaxPeerRanks) {
    plan.algo = Algorithm::kDirect;
    return plan;
  }
  // OneShot on more than two ranks (its own kernel, over per-peer connections) only when forced:
  // on ranks sharing an H200 it lost to the ring at every size (4 ranks, 8 B: 80 us against 32).
  // Tree (its own kernel, over the channels' tree connections) likewise: there 46 against 32 us at
  // 8 B and 145 against 54 at 2 MiB, and a GPU communicator's ranks share one process and host,
  // where the tree is a chain whose depth grows with the ranks (NCCL too keeps trees for crossing
  // nodes).
  const bool oneShot = kind == CollKind::kAllReduce && nranks >= 2 &&
                       ((cfg.forcedAlgo == static_cast<int>(Algorithm::kOneShot) && nranks <= kGpuMaxPeerRanks) ||
                        (cfg.forcedAlgo < 0 && nranks == 2 && bytes <= kOneShotMaxBytes));
  if (model != nullptr && !sharedDevice && !oneShot && nranks >= 2)
    return planGpuByModel(cfg, kind, bytes, maxChannels, *model);
  if (oneShot)
    plan.algo = Algorithm::kOneShot;
  else if (kind == CollKind::kAllReduce && nranks >= 2 && cfg.forcedAlgo == static_cast<int>(Algorithm::kTree))
    plan.algo = Algorithm::kTree;
  if (cfg.forcedProto >= 0)
    plan.proto = static_cast<Protocol>(cfg.forcedProto);
  else if (!sharedDevice && bytes <= kLlMaxBytes)
    plan.proto = Protocol::kLL;
  const size_t wanted = (bytes + kBytesPerChannel - 1) / kBytesPerChannel;
  plan.nChannels = static_cast<int>(std::clamp<size_t>(wanted, 1, static_cast<size_t>(std::max(maxChannels, 1))));
  return plan;
}

}  // namespace collcomm::detail
