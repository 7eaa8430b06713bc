// What this process tells its peers about itself at init.
#pragma once

#include <vector>

#include "transport/transport.h"

namespace collcomm::detail {

// Same on every process of one host (hostname + boot id), different across hosts.
uint64_t localHostHash();
// Same on every process that runs on this kernel (its boot id; the hostname where that cannot be
// read), COLLCOMM_HOSTID or not.
uint64_t localMachineHash();
// Random per process; a forked child gets a new one.
uint64_t localProcessToken();
PeerInfo localPeerInfo(int rank, int device);
// True when rank's machine runs more ranks than the CPUs their threads may use between them:
// waiting ranks must then give their core away at once instead of spinning (a spinning waiter holds
// the core the rank it waits for needs). threadsPerProcess: busy threads each process runs besides
// its ranks (1 for the proxy thread of a process whose ranks talk over NET). Ranks count by the
// kernel they share (machineHash), not by host: hosts told apart by COLLCOMM_HOSTID on one machine
// (network namespaces) compete for the same CPUs.
bool hostOversubscribed(const std::vector<PeerInfo>& peers, int rank, int threadsPerProcess = 0);
// The most ranks that one GPU runs (at least 1; core/gpu_job.h sameGpu, processes under MPS
// included): ranks sharing a GPU split its blocks between them, and the planner chooses for them
// from measurements of their own.
int mostRanksOnOneDevice(const std::vector<PeerInfo>& peers);

}  // namespace collcomm::detail
