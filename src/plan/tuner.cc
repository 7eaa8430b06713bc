// Per-operation choices. Measured on the 2-vCPU dev VM with perf/compare/planner_check.sh (2
// processes pinned; 2026-11-22):
// - Protocol: LL wins only below 16 B (one-shot AllReduce, 8 B: LL 0.25 us, Simple 0.30; 32 B:
//   0.47 against 0.31; 64 B: 0.70 against 0.31), so the LL threshold is 16 B until the host LL
//   path is fixed (a receiver polling a cache line the sender is still filling).
// - Algorithm: one-shot AllReduce while what a rank receives is at most 64 KiB (8 B: 0.24 us
//   against the ring's 0.45; 64 KiB: 7.5 against 18.5 us), ring above (256 KiB: about equal).
// - Results stream past the cache from 4 MiB (out of place 16 MiB: +20% busbw).
#include "plan/tuner.h"

#include <strings.h>

#include <string>

#include "common/params.h"

namespace collcomm::detail {

Status loadTunerConfig(TunerConfig* out) {
  TunerConfig cfg;
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
    else
      return CC_ERROR(Status::kInvalidArgument,
                      "COLLCOMM_ALGO=%s is not an algorithm this build has (use Ring or OneShot)", algo.c_str());
  }
  const int64_t oneShot = paramInt(Param::kOneshotThreshold);
  if (oneShot >= 0) cfg.oneShotThreshold = static_cast<size_t>(oneShot);
  const int64_t threshold = paramInt(Param::kLlThreshold);
  if (threshold >= 0) cfg.llThreshold = static_cast<size_t>(threshold);
  const int64_t stream = paramInt(Param::kStreamThreshold);
  if (stream >= 0) cfg.streamThreshold = static_cast<size_t>(stream);
  *out = cfg;
  return kOk;
}

CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels) {
  CollPlan plan{Protocol::kSimple, Algorithm::kRing, nChannels, bytes >= cfg.streamThreshold};
  // OneShot exists for AllReduce; a forced OneShot leaves the other collectives on rings. On more
  // than two ranks each rank receives (n-1) inputs and reduces them all, so the threshold applies
  // to what one rank receives.
  if (kind == CollKind::kAllReduce && nranks >= 2) {
    if (cfg.forcedAlgo >= 0)
      plan.algo = static_cast<Algorithm>(cfg.forcedAlgo);
    else if (bytes * static_cast<size_t>(nranks - 1) <= cfg.oneShotThreshold)
      plan.algo = Algorithm::kOneShot;
  }
  if (cfg.forcedProto >= 0)
    plan.proto = static_cast<Protocol>(cfg.forcedProto);
  else if (cfg.llThreshold != 0 && bytes <= cfg.llThreshold)
    plan.proto = Protocol::kLL;
  return plan;
}

}  // namespace collcomm::detail
