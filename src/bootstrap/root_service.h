// The root rendezvous service of one job: collects every rank's registration, checks that they
// agree, and sends each rank the address table (or the sentence saying why the job cannot start).
//
// It runs on a detached thread that owns everything it uses and ends when every rank has received
// the table, when the job has failed and every rank it expected has been answered, or after its
// timeout (COLLCOMM_TIMEOUT, read by the caller). A connection that does not start with the
// bootstrap magic and the job's secret, or says nothing for a few seconds, is closed (logged at
// INFO) without disturbing the job.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/socket.h"
#include "common/status.h"

namespace collcomm::detail {

// Starts the service on `listener` (bound to `addr`). timeoutSeconds <= 0: no timeout.
Status startRootService(Socket listener, const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds);

// Binds `addr` and starts the service there if `addr` is one of this host's addresses. *started is
// false, with no error, when it is not (EADDRNOTAVAIL) or when something already listens there.
Status startRootServiceAt(const SocketAddress& addr, const uint64_t secret[2], double timeoutSeconds, bool* started);

// A root's failure as seen by ranks in the root's own process. Those ranks compete with the root for
// descriptors, so when the root runs out it may not be able to accept their connections to refuse
// them; they learn the failure here instead of waiting for their deadline.
struct LocalRootFailure {
  std::atomic<bool> failed{false};  // set (release) after code and sentence are written
  Status code = kOk;
  std::string sentence;
};

// The failure record of the root this process serves at `addr`, or null when it serves none there.
std::shared_ptr<const LocalRootFailure> watchLocalRoot(const SocketAddress& addr);

}  // namespace collcomm::detail
