// What this process tells its peers about itself at init.
#pragma once

#include "transport/transport.h"

namespace collcomm::detail {

// Same on every process of one host (hostname + boot id), different across hosts.
uint64_t localHostHash();
// Random per process; a forked child gets a new one.
uint64_t localProcessToken();
PeerInfo localPeerInfo(int rank, int device);

}  // namespace collcomm::detail
