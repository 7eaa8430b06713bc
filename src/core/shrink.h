// ccCommShrink: a new communicator of the parent's ranks minus the excluded ones, made by the
// remaining ranks alone over the parent's bootstrap, so that a job can go on without a failed rank.
#pragma once

#include <vector>

#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// The excluded ranks, sorted, once each; or a sentence: one out of range or named twice, or this
// rank itself.
Status checkExcludedRanks(const ccComm* parent, const int* excludeRanks, int count, std::vector<int>* sorted);

// Whether `parent` can be shrunk at all: its init finished and its bootstrap was not ended
// (ccCommRevoke, ccCommAbort).
Status checkShrinkable(ccComm* parent);

// Run by each remaining rank with the same `excluded` (checkExcludedRanks'): the lowest remaining
// rank checks that every other one names the same ranks, then hands them a fresh unique id, and
// they initialise the new communicator, ranked in the parent's order. The excluded ranks take no
// part (they may be dead). A remaining rank whose own part failed before (`local`: its stop, a
// parent not quiet) still tells the lowest, so every rank fails at once naming it; where ranks
// name different lists, the lowest names one that differs (ccInvalidUsage) if they agree on who is
// lowest, else the shrinks end at the parent's timeout naming a rank that never answered.
Status commShrink(ccComm* parent, const std::vector<int>& excluded, const CommConfig& config, Status local,
                  ccComm** out);

}  // namespace collcomm::detail
