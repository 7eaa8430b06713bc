// The library's choice per size at COLLCOMM_DEBUG=INFO: after each table row the harness prints
// the plan rank 0's calls of that size follow ("algorithm Ring, protocol LL, 1 channel(s)"), read
// through ccCommDescribePlan (the same planner the calls use; nothing runs, nothing is logged).
//
// Tiers: active() is setup (its answer is read once); describe is control (the reporting rank's
// thread, between sizes).
#pragma once

#include <cstddef>
#include <vector>

#include "collcomm.h"
#include "common/report.h"

namespace collcomm::perf {

class PlanCapture {
 public:
  // Whether the rows show plans: COLLCOMM_DEBUG is INFO or TRACE and COLLCOMM_DEBUG_FILE is unset
  // (the log goes to the terminal, where the plan lines belong with the rows).
  static bool active();
  // The plan `comm` makes for one call of `collective` (its name as the library spells it), with
  // the call's count argument, type and root; empty for operations made of point-to-point
  // transfers (AlltoAll, Gather, Scatter, SendRecv), which have no plan.
  static std::vector<PlanInfo> describe(ccComm_t comm, const char* collective, size_t count, ccDataType_t type,
                                        int root);
};

}  // namespace collcomm::perf
