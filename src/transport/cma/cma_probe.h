// Whether a communicator can run the Direct algorithm: decided once at init, the same on every
// rank. Setup tier (two bootstrap all-gathers when the ranks span processes, none otherwise).
#pragma once

#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/deadline.h"
#include "common/status.h"
#include "transport/transport.h"

namespace collcomm::detail {

struct DirectAccess {
  bool ok = false;            // every rank can read every other rank's memory
  bool crossProcess = false;  // some of it through process_vm_readv
};

// All ranks on one host and either threads of one process, or processes that can read each
// other's memory with process_vm_readv: each rank publishes (pid, address of a word holding a
// random value), reads every other process's word and checks it, and the results are gathered so
// every rank decides the same. COLLCOMM_CMA_DISABLE=1 on any rank, or any failed read (Yama
// ptrace_scope, a container's seccomp or capabilities, PID namespaces), turns Direct off with one
// INFO line saying why; that is never an error. Errors are bootstrap failures only.
Status probeDirectAccess(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, Deadline deadline,
                         DirectAccess* out);

}  // namespace collcomm::detail
