// Per-operation choices. Measured on the 2-vCPU dev VM with perf/compare/planner_check.sh (2
// processes pinned; 2026-11-22):
// - Protocol: LL wins only below 16 B (one-shot AllReduce, 8 B: LL 0.25 us, Simple 0.30; 32 B:
//   0.47 against 0.31; 64 B: 0.70 against 0.31), so the LL threshold is 16 B until the host LL
//   path is fixed (a receiver polling a cache line the sender is still filling).
// - Algorithm: one-shot AllReduce while what a rank receives is at most 64 KiB (8 B: 0.24 us
//   against the ring's 0.45; 64 KiB: 7.5 against 18.5 us), ring above (256 KiB: about equal).
//   Over NET up to 256 KiB: the ring's second phase costs a network round trip (2026-11-24, 2
//   processes over loopback TCP, near phase, out-of-place/in-place us, one-shot against ring:
//   128 KiB 54-59/39-40 against 65-66/47, 256 KiB 82-90/72-74 against 85-88/75-77; 512 KiB
//   equal, 137 against 134). Two ranks only: 4 ranks over NET on the 2 cores lost with one-shot
//   at 64 KiB (192 KiB received: 488 against the ring's 371 us).
// - Results stream past the cache from half the last-level cache up, at least 4 MiB. On the Xeon
//   this VM first ran on (2026-11-22), streaming from 4 MiB gave out-of-place 16 MiB +20% busbw.
//   On the AMD EPYC (Zen 4, 32 MiB L3) it has run on since 2026-11-23, measured 2026-11-25,
//   streaming at 4 and 8 MiB lost on every collective (2 processes pinned, near phase,
//   out-of-place/in-place us, streamed against not, 3 interleaved runs each: AllReduce 4 MiB 231-238/242-259 against 154-159/130-133,
//   Broadcast 4 MiB 431-444/102-143 against 122-132/77-78, AllGather 8 MiB 460-465/225-227
//   against 190-198/142-143, ReduceScatter 4 MiB 130-150/81-86 against 95-105/80-83), was even
//   at 16 MiB (AllReduce 1166-1217/983-1042 against 1229-1293/772-851, ReduceScatter
//   676-691/477-494 against 697-734/451-491) and won in place at 64 MiB (Broadcast 2.8-3.0
//   against 5.6-5.8 ms).
//   Over NET twice that, the whole last-level cache and at least 8 MiB: there the operation is
//   bound by the kernel's work per packet on both cores, not by memory, and streamed results lost
//   (2026-11-25, 2 processes over loopback TCP, out-of-place/in-place us, streamed against not,
//   interleaved rounds): 16 MiB near 3513-3743/3207-3289 against 3393-3467/3006-3270, far
//   4359-4780/3990-4259 against 4205-4573/3816-4088; 64 MiB near 13464-13529/12624-12839
//   against 13885-14009/11951-12110 (streaming still wins out of place there).
// - FIFO steps stream past the cache from 64 KiB while the receiver finds the sender's core far
//   (device/host/core_distance.h; 2026-11-24, 2 processes pinned, the VM in a phase where its two
//   vCPUs sit on different dies, out-of-place us without -> with): broadcast 1 MiB 436 -> 77,
//   16 MiB 8102 -> 1265; allreduce 64 KiB 35 -> 9-22, 1 MiB 781 -> 90; reduce_scatter 16 MiB
//   4164 -> 975; allgather 1 MiB 247 -> 45. Streaming them always would cost where the cores share
//   a cache (allreduce 1 MiB 59 -> 115, allgather 1 MiB 38 -> 59): hence the receiver's verdict.
//   In a milder far phase (2026-11-25) streaming lost up to 4 MiB except for AllReduce; each
//   communicator now learns which way is faster while far (plan/step_stream_choice.h).
// - Over NET, a Simple step of 16 KiB or more goes to the network as soon as the executor
//   publishes it (HostWaitContext::sendNow; 2026-11-25, 2 processes over loopback TCP, pairs of
//   runs with it off and on, median ratio on/off): 16 MiB allreduce 0.942 out of place / 0.976
//   in place near, 0.968 / 1.006 far; 2 MiB 0.95 / 0.96; 4-64 KiB even. Every step handed off
//   cost 1 KiB 3-7% (0.2-0.4 us: a second lock round before the wait's), hence the threshold.
// - Direct (single copy from the peers' buffers; 2026-11-23, 2 ranks, out-of-place / in-place us;
//   docs/perf.md "Single-copy (Direct) collectives" has the tables and commands):
//   * ranks as threads of one process (plain copies; best of 9 runs): AllGather, Broadcast and
//     ReduceScatter win from 16 KiB up (AllGather 16 KiB 0.6/0.4 against the ring's 1.4/1.3,
//     4 MiB 94/45 against 299/197; at 4 KiB ReduceScatter lost, 1.9 against 0.7); AllReduce only
//     from 4 MiB (172/165 against 398/401; 1 MiB 45/50 against 49/54, and medians of 5 gave
//     56/86 against 61/58 there).
//   * ranks as processes (process_vm_readv pins every page it copies: 8-10 GB/s against
//     memcpy's 40 in cache): loses at most sizes from 16 KiB to 256 MiB (AllGather 1 MiB 53/41
//     against 37/30, ReduceScatter 16 MiB 3212/2667 against 1319/1000), except a window where
//     the ring's two copies of one or two FIFO steps do not overlap yet: AllGather 64-128 KiB
//     (64 KiB 4.8/4.4 against 5.5/4.8, 128 KiB 7.6-8.1/6.5 against 9.2-9.8/8.6-9.0; 32 KiB
//     3.5/3.1 against 2.0-2.9/1.4-2.6; 256 KiB 13.9/11.2 against 11.6/8.8) and Broadcast at
//     64 KiB (6.3-6.4/6.5-7.4 against 8.6-9.2/7.3-7.8; 128 KiB in place 10.8-10.9 against
//     9.3-10.2), three alternated runs each, 2026-11-23. By 2026-11-25 the ring had become 2-4x
//     faster at these sizes (its steps, LL and streaming work of 2026-11-24) and those windows
//     lost 2-3x (three interleaved runs, Direct against the ring): AllGather 64 KiB 3.7/3.5
//     against 1.3/1.1, 128 KiB 5.9/5.3 against 2.5/2.0; Broadcast 32 KiB 2.6/2.4 against
//     0.7/0.7, 256 KiB 10.9/8.9 against 5.3/4.3. So across processes Direct is off unless forced
//     or COLLCOMM_DIRECT_THRESHOLD is set (from that size up, no upper end); the windows' upper
//     ends went with them.
//   * Broadcast across processes since 2026-11-24 (late) splits the copy: the root writes part of the
//     buffer into each peer (process_vm_writev) while the peer reads the rest, both cores copying
//     at once. 2 processes pinned, near phase (ping-pong ~120 ns), medians of 5 interleaved runs,
//     out-of-place/in-place us, Direct against the ring: 16 KiB 3.2/3.1 against 2.6/2.4, 32 KiB
//     4.2/3.6 against 5.2/4.3, 64 KiB 6.3/5.4 against 8.8/7.9, 128 KiB 9.8/7.3 against 11.2/8.7,
//     256 KiB 20.0-20.7/14.0-14.9 against 22.2-25.4/12.8-16.5, 1 MiB 87/54 against 56/51 (out of
//     place the root's own copy adds to its half). Hence 32-256 KiB then. In the far phase
//     (~500 ns) Direct won much more (16 KiB 4.2 against 9.7) but the planner does not know the
//     phase. On 2026-11-25, Broadcast at 16 MiB split by variant: out of place Direct won
//     (1139-1247 against the ring's 1457-1640, or 806 in a run where the ring's root stayed in
//     cache), in place the ring did (404-448 against 790-842);
//     the planner cannot tell them apart (only the root knows whether its call is in place, and
//     every rank must choose alike), and MPI_Bcast is always in place: the ring stays.
//   * Direct results stream past the cache only from 16 MiB: its working set has no FIFOs, and
//     streaming at 4 MiB made AllGather 3x slower (353 against 109 us).
#include "plan/tuner.h"

#include <strings.h>

#include <algorithm>

#include <string>

#include "common/params.h"
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
    else
      return CC_ERROR(Status::kInvalidArgument,
                      "COLLCOMM_ALGO=%s is not an algorithm this build has (use Ring, OneShot or Direct)",
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
    t[static_cast<int>(CollKind::kAllGather)] = size_t{16} << 10;
    t[static_cast<int>(CollKind::kBroadcast)] = size_t{16} << 10;
    t[static_cast<int>(CollKind::kReduceScatter)] = size_t{16} << 10;
    t[static_cast<int>(CollKind::kAllReduce)] = size_t{4} << 20;
  }
  // Across processes: off unless forced or set (the header comment: the windows of 2026-11-23
  // lost 2-3x by 2026-11-25).
  return t;
}

CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels,
                        DirectReach reach, bool overNet) {
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
  // OneShot exists for AllReduce; a forced OneShot leaves the other collectives on rings. On more
  // than two ranks each rank receives (n-1) inputs and reduces them all, so the threshold applies
  // to what one rank receives.
  if (kind == CollKind::kAllReduce && nranks >= 2) {
    if (cfg.forcedAlgo >= 0 && cfg.forcedAlgo != static_cast<int>(Algorithm::kDirect))
      plan.algo = static_cast<Algorithm>(cfg.forcedAlgo);
    else if (bytes * static_cast<size_t>(nranks - 1) <=
             (overNet && nranks == 2 ? cfg.oneShotNetThreshold : cfg.oneShotThreshold))
      plan.algo = Algorithm::kOneShot;
  }
  if (cfg.forcedProto >= 0)
    plan.proto = static_cast<Protocol>(cfg.forcedProto);
  else if (cfg.llThreshold != 0 && bytes <= cfg.llThreshold)
    plan.proto = Protocol::kLL;
  return plan;
}

}  // namespace collcomm::detail
