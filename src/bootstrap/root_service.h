// The root rendezvous service of one job: collects every rank's registration, checks that they
// agree, and sends each rank the address table (or the sentence saying why the job cannot start).
//
// It runs on a detached thread that owns everything it uses and ends when every rank has received
// the table, when the job has failed and every rank it expected has been answered, or after its
// timeout (COLLCOMM_TIMEOUT, read by the caller). A connection that does not start with the
// bootstrap magic and the job's secret, or says nothing for a few seconds, is closed (logged at
// INFO) without disturbing the job.
#pragma once

#include <cstdint>

#include "bootstrap/socket.h"
#include "common/status.h"

namespace collcomm::detail {

// Starts the service on `listener` (bound to `addr`). timeoutSeconds <= 0: no timeout.
Status startRootService(Socket listener, const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds);

// Binds `addr` and starts the service there if `addr` is one of this host's addresses. *started is
// false, with no error, when it is not (EADDRNOTAVAIL) or when something already listens there.
Status startRootServiceAt(const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds, bool* started);

}  // namespace collcomm::detail
