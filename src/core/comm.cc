// Communicator methods shared by the operation paths.
#include "core/comm.h"

using namespace collcomm::detail;

Status ccComm::adoptBootstrap(std::unique_ptr<Bootstrap> made) {
  std::lock_guard<std::mutex> lock(bootstrapMu_);
  bootstrap = std::move(made);
  // ccCommAbort sets the flag before it takes the lock: either it sees this bootstrap, or this
  // sees the flag.
  if (abortFlag.load() == 0) return kOk;
  bootstrap->abort();
  bootstrapAborted_ = true;
  return CC_ERROR(Status::kRemoteError, "rank %d's communicator was aborted during its initialisation", rank);
}

bool ccComm::abortBootstrap() {
  std::lock_guard<std::mutex> lock(bootstrapMu_);
  if (!bootstrap) return false;
  bootstrap->abort();
  bootstrapAborted_ = true;
  return true;
}

bool ccComm::bootstrapUsable() {
  std::lock_guard<std::mutex> lock(bootstrapMu_);
  return bootstrap && !bootstrapAborted_;
}

void ccComm::interruptBootstrap(bool on) {
  std::lock_guard<std::mutex> lock(bootstrapMu_);
  if (!bootstrap) return;
  if (on)
    bootstrap->interrupt();
  else
    bootstrap->resume();
}

ConnSetup ccComm::connSetup(Deadline deadline) const {
  return ConnSetup{{secret[0], secret[1]}, deadline, &netOpsRunning};
}

void ccComm::leaveConnections(int culprit, GoneReason reason) {
  if (config.device >= 0) {
    // The state words are in device memory: only the executor can write them (none yet if init
    // failed before making it; no kernel of this rank ran then).
    if (executor) executor->leave(culprit, reason);
    return;
  }
  const uint32_t state = goneState(culprit, reason);
  // The first departure's cause stays: an abort after a failure must not hide the root cause.
  auto leave = [state](const PeerRef& ref) {
    if (ref.ownState == nullptr) return;
    uint32_t active = kPeerActive;
    __atomic_compare_exchange_n(ref.ownState, &active, state, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  };
  for (Channel& ch : channels) {
    leave(ch.send.peer);
    leave(ch.recv.peer);
  }
  auto leavePeer = [&](P2pPeer& p) {
    if (p.sendReady) leave(p.send.peer);
    if (p.recvReady) leave(p.recv.peer);
  };
  for (auto* peers : {&p2p, &collPeers})
    for (P2pPeer& p : *peers) leavePeer(p);
  for (TreeConns& t : treeConns) {
    leavePeer(t.parent);
    for (P2pPeer& c : t.child) leavePeer(c);
  }
}
