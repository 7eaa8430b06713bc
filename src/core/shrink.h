// ccCommShrink: a new communicator of the parent's ranks minus the excluded ones, made by the
// remaining ranks alone over the parent's bootstrap, so that a job can go on without a failed rank.
#pragma once

#include <vector>

#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// The excluded ranks, sorted, once each; or a sentence: one out of range or named twice, this rank
// itself, or every rank.
Status checkExcludedRanks(const ccComm* parent, const int* excludeRanks, int count, std::vector<int>* sorted);

// Run by each remaining rank with the same `excluded` (checkExcludedRanks'): the lowest remaining
// rank checks that every other one names the same ranks, then hands them a fresh unique id, and
// they initialise the new communicator, ranked in the parent's order. A rank that names other
// ranks gets ccInvalidUsage on every rank that heard of it; a remaining rank that never calls, the
// parent's timeout naming it. The excluded ranks take no part (they may be dead).
Status commShrink(ccComm* parent, const std::vector<int>& excluded, const CommConfig& config, ccComm** out);

}  // namespace collcomm::detail
