// Slow path of host waits: deciding that a wait has failed, and the sentence that says why; and
// Direct's copies from and to a peer's memory.
#include "device/host/host_platform.h"

#include <cstdio>
#include <cstring>

#include "common/process_watch.h"
#include "transport/cma/peer_memory.h"

namespace collcomm::detail {

bool HostPlatform::healthy(const PeerRef& peer, const char* what, Recheck again) {
  if (!isOk(status_)) return false;
  if (ctx_.abortFlag != nullptr && ctx_.abortFlag->load(std::memory_order_acquire) != 0) {
    status_ = CC_ERROR(Status::kInvalidUsage,
                       "%s on rank %d stopped: the communicator was aborted (ccCommAbort or ccCommRevoke)", ctx_.opName,
                       ctx_.rank);
    blame(ctx_.rank, kGoneAborted);
    return false;
  }
  if (peer.peerState != nullptr) {
    const uint32_t state = __atomic_load_n(peer.peerState, __ATOMIC_ACQUIRE);
    if (isGone(state)) {
      if (again.fn(again.arg)) return true;
      const int culprit = goneCulprit(state);
      const GoneReason reason = goneReason(state);
      const char* why = goneReasonText(reason);
      if (culprit >= 0 && culprit != peer.rank)
        status_ = CC_ERROR(Status::kRemoteError,
                           "%s on rank %d failed: rank %d (host %s) %s, and rank %d (host %s) left the operation "
                           "because of it while this rank was waiting for %s",
                           ctx_.opName, ctx_.rank, culprit, hostOf(culprit), why, peer.rank, peer.host, what);
      else
        status_ = CC_ERROR(Status::kRemoteError,
                           "%s on rank %d failed: rank %d (host %s) %s and left the operation while this rank was "
                           "waiting for %s",
                           ctx_.opName, ctx_.rank, peer.rank, peer.host, why, what);
      blame(culprit >= 0 ? culprit : peer.rank, reason);
      return false;
    }
  }
  const auto now = Deadline::Clock::now();
  if (!peer.sameProcess && peer.pid > 0 && now >= nextLivenessCheck_) {
    nextLivenessCheck_ = now + kProcessCheckPeriod;
    if (!processAlive(peer.pid)) {
      if (again.fn(again.arg)) return true;
      status_ = CC_ERROR(Status::kRemoteError,
                         "%s on rank %d failed: rank %d (host %s, pid %d) exited while this rank was waiting for %s",
                         ctx_.opName, ctx_.rank, peer.rank, peer.host, peer.pid, what);
      blame(peer.rank, kGoneExited);
      return false;
    }
  }
  if (!deadlineStarted_) {
    deadlineStarted_ = true;
    deadline_ = ctx_.deadline.at() != Deadline::Clock::time_point::max() || ctx_.timeoutSeconds <= 0
                    ? ctx_.deadline.at()
                    : Deadline::afterSeconds(ctx_.timeoutSeconds).at();
  }
  if (now >= deadline_) {
    status_ = CC_ERROR(Status::kTimeout,
                       "%s on rank %d timed out after %d s waiting for %s from rank %d (host %s); "
                       "raise COLLCOMM_TIMEOUT if the peer is just slow, or check that every rank made the same call",
                       ctx_.opName, ctx_.rank, ctx_.timeoutSeconds, what, peer.rank, peer.host);
    blame(ctx_.rank, kGoneTimedOut);
    return false;
  }
  return true;
}

void HostPlatform::failStepMismatch(const PeerRef& peer, uint64_t sent, uint64_t expected) {
  if (!isOk(status_)) return;
  char why[256];
  describeStepMismatch(sent, expected, why, sizeof(why));
  status_ = CC_ERROR(Status::kInvalidUsage, "%s on rank %d: rank %d (host %s) %s", ctx_.opName, ctx_.rank, peer.rank,
                     peer.host, why);
}

bool HostPlatform::copyPeer(int rank, void* local, void* remote, size_t bytes, bool intoPeer) {
  if (!isOk(status_)) return false;
  const bool sameProcess = ctx_.peers == nullptr || ctx_.peers[rank].sameProcess;
  // Large results (the plan's streamResults) bypass the cache when this thread does the copy, as
  // the ring's do; process_vm_readv/writev copy in the kernel, with plain stores.
  if (sameProcess && ctx_.streamResults) {
    intoPeer ? streamCopy(remote, local, bytes) : streamCopy(local, remote, bytes);
    streamFence();
    return true;
  }
  const PeerMemory peer{rank, ctx_.peers != nullptr ? ctx_.peers[rank].pid : 0, sameProcess, hostOf(rank)};
  const Status s = intoPeer ? collcomm::detail::writePeer(peer, local, remote, bytes, ctx_.opName, ctx_.rank)
                            : collcomm::detail::readPeer(peer, remote, local, bytes, ctx_.opName, ctx_.rank);
  if (isOk(s)) return true;
  status_ = s;
  blame(rank, kGoneFailed);
  return false;
}

}  // namespace collcomm::detail
