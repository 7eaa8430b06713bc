// Logging of plans: every operation's plan at TUNING INFO, and each distinct plan of a
// communicator once at PLAN INFO (COLLCOMM_DEBUG_SUBSYS=PLAN). Distinct: any field differs (the
// plan holds no buffer address). The set of plans seen is bounded: after kMaxPlans distinct plans
// the communicator says once that it logs no more.
//
// Control tier, one per communicator, used by the thread that runs its operations. With INFO off,
// note() costs one load and one predictable branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_set>

#include "common/log.h"
#include "plan/plan.h"

namespace collcomm::detail {

class PlanLog {
 public:
  static constexpr size_t kMaxPlans = 4096;

  void note(const Plan& plan) {
    if (logEnabled(LogLevel::kInfo, kSubsysPlan | kSubsysTuning)) noteSlow(plan);
  }

 private:
  void noteSlow(const Plan& plan);

  // The fields that vary between a communicator's plans; the rest (rank, ranks, rings, steps) are
  // the communicator's.
  struct Key {
    uint64_t count;
    uint64_t choice;  // kind, dtype, algorithm, protocol, channels, flags
    int root;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return (k.count * 0x9e3779b97f4a7c15ull ^ k.choice) * 0xbf58476d1ce4e5b9ull ^ static_cast<uint32_t>(k.root);
    }
  };
  std::unordered_set<Key, KeyHash> seen_;
  bool full_ = false;
};

}  // namespace collcomm::detail
