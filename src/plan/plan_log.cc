// Plan logging (plan_log.h): the slow path, taken only at INFO.
#include "plan/plan_log.h"

#include <string>

namespace collcomm::detail {

void PlanLog::noteSlow(const Plan& plan) {
  const bool tuning = logEnabled(LogLevel::kInfo, kSubsysTuning);
  bool fresh = false;
  if (logEnabled(LogLevel::kInfo, kSubsysPlan) && !full_) {
    // The enums are small; channels fit in 32 bits.
    const Key key{plan.count,
                  static_cast<uint64_t>(plan.kind) | static_cast<uint64_t>(plan.dtype) << 8 |
                      static_cast<uint64_t>(plan.algo) << 16 | static_cast<uint64_t>(plan.proto) << 20 |
                      static_cast<uint64_t>(plan.streamResults) << 24 | static_cast<uint64_t>(plan.streamSteps) << 25 |
                      static_cast<uint64_t>(plan.streamStepsAlways) << 26 |
                      static_cast<uint64_t>(static_cast<uint32_t>(plan.nChannels)) << 32,
                  plan.root};
    if (seen_.size() >= kMaxPlans && seen_.count(key) == 0) {
      full_ = true;
      CC_INFO(kSubsysPlan,
              "rank %d: %zu distinct plans logged; no new plan will be (the TUNING subsystem logs every "
              "operation's)",
              plan.rank, seen_.size());
    } else {
      fresh = seen_.insert(key).second;
    }
  }
  if (!fresh && !tuning) return;
  const std::string text = formatPlanText(plan);
  if (fresh) CC_INFO(kSubsysPlan, "plan %s", text.c_str());
  if (tuning) CC_INFO(kSubsysTuning, "%s", text.c_str());
}

}  // namespace collcomm::detail
