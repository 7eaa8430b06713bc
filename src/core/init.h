// Communicator creation and teardown (setup tier).
#pragma once

#include "bootstrap/bootstrap.h"
#include "collcomm.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// Resolves a user config (may be null) against COLLCOMM_* and defaults; rejects a malformed one.
Status resolveConfig(const ccConfig_t* user, CommConfig* out);

// Joins the job `id` as `rank` of `nranks`: bootstrap, peer exchange, ring connections.
// On failure nothing is left behind and *out is untouched.
Status commInit(ccComm** out, int nranks, const UniqueIdData& id, int rank, const CommConfig& config);

// Frees everything; never blocks on peers.
void commFree(ccComm* comm);

}  // namespace collcomm::detail
