// Communicator creation and teardown (setup tier).
#pragma once

#include "bootstrap/bootstrap.h"
#include "collcomm.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// A usable device argument (`what` names it in the sentence): CC_DEVICE_HOST; a CUDA ordinal gets
// ccInvalidUsage until GPU communicators exist.
Status checkDevice(int device, const char* what);
// nranks >= 1 and rank in [0, nranks).
Status checkRankArgs(int nranks, int rank);

// The connection FIFOs' sizes that COLLCOMM_BUFFSIZE and COLLCOMM_LL_BUFFSIZE give (a ring's
// steps before its connections agree on them: init.cc agreeRingStep); cc-plan --host plans with them.
FifoSizes fifoSizesFromParams();

// Resolves a user config (may be null) against COLLCOMM_* and defaults; rejects a malformed one.
Status resolveConfig(const ccConfig_t* user, CommConfig* out);

// A communicator that knows its rank, size and config and has no resources yet: its handle can be
// given to the user before commSetup runs (on the caller's thread or on its worker).
ccComm* newComm(int nranks, int rank, const CommConfig& config);
// Joins the job `id` as the communicator's rank: bootstrap, peer exchange, ring connections. On
// failure what was made stays on the communicator, for commFree.
Status commSetup(ccComm* comm, const UniqueIdData& id);
// newComm, then commSetup on this thread. On failure nothing is left behind and *out is untouched.
Status commInit(ccComm** out, int nranks, const UniqueIdData& id, int rank, const CommConfig& config);

// Refuses (`call` names the caller) a communicator whose commSetup has not finished: it runs
// still, on a non-blocking communicator's worker, or it failed.
Status checkInitialised(const ccComm* comm, const char* call);

// Frees everything; never blocks on peers.
void commFree(ccComm* comm);

}  // namespace collcomm::detail
