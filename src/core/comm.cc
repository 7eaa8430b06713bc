// Communicator methods shared by the operation paths.
#include "core/comm.h"

using namespace collcomm::detail;

HostWaitContext ccComm::waitContext(const char* opName) const {
  HostWaitContext ctx;
  ctx.abortFlag = &abortFlag;
  ctx.deadline = Deadline::afterSeconds(config.timeoutSeconds);
  ctx.timeoutSeconds = config.timeoutSeconds;
  ctx.spinCount = spinCount;
  ctx.opName = opName;
  ctx.rank = rank;
  return ctx;
}

void ccComm::leaveConnections() {
  auto leave = [](const PeerRef& ref) {
    if (ref.ownState != nullptr) __atomic_store_n(ref.ownState, kPeerGone, __ATOMIC_RELEASE);
  };
  for (Channel& ch : channels) {
    leave(ch.send.peer);
    leave(ch.recv.peer);
  }
  for (P2pPeer& p : p2p) {
    if (p.sendReady) leave(p.send.peer);
    if (p.recvReady) leave(p.recv.peer);
  }
}
