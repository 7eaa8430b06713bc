// Point-to-point batches on the host: a polling engine that moves Simple-protocol steps for every
// active transfer without blocking on any one, so a group that sends to and receives from many
// peers (or the same peer both ways) always makes progress.
#include <cstring>

#include "common/futex.h"
#include "device/host/host_executor.h"

namespace collcomm::detail {
namespace {

using P = HostPlatform;

// Moves as many steps of one send as the receiver has room for. True if anything moved.
bool pumpSend(ExecTransfer& op) {
  SendConn& c = *op.send;
  bool moved = false;
  auto roomFor = [&c](uint64_t step) {
    // The shared head line is read only when the cached value says the FIFO may be full.
    return c.simpleHeadSeen + kNumSteps > step || (c.simpleHeadSeen = P::loadAcquire(&c.ctrl->simpleHead)) + kNumSteps > step;
  };
  while (op.done < op.bytes && roomFor(c.simpleStep)) {
    const size_t len = op.bytes - op.done < c.simpleStepMax ? op.bytes - op.done : c.simpleStepMax;
    const uint64_t slot = c.simpleStep % kNumSteps;
    memcpy(c.simpleBuf + slot * c.simpleStepBytes, static_cast<const char*>(op.buf) + op.done, len);
    P::storeRelaxed(&c.ctrl->simpleBytes[slot], len);
    P::storeRelease(&c.ctrl->simpleTail, c.simpleStep + 1);
    c.simpleStep++;
    wakeParked(c.peer.wakeBell);
    op.done += len;
    moved = true;
  }
  return moved;
}

// Moves as many steps of one receive as have arrived. True if anything moved.
bool pumpRecv(ExecTransfer& op, P& plat) {
  RecvConn& c = *op.recv;
  bool moved = false;
  while (op.done < op.bytes && P::loadAcquire(&c.ctrl->simpleTail) > c.simpleStep) {
    const size_t len = op.bytes - op.done < c.simpleStepMax ? op.bytes - op.done : c.simpleStepMax;
    const uint64_t slot = c.simpleStep % kNumSteps;
    const uint64_t sent = P::loadRelaxed(&c.ctrl->simpleBytes[slot]);
    if (sent != len) {
      plat.failSizeMismatch(c.peer, sent, len);
      return false;
    }
    memcpy(static_cast<char*>(op.buf) + op.done, c.simpleBuf + slot * c.simpleStepBytes, len);
    P::storeRelease(&c.ctrl->simpleHead, c.simpleStep + 1);
    c.simpleStep++;
    wakeParked(c.peer.wakeBell);
    op.done += len;
    moved = true;
  }
  return moved;
}

// Whether a transfer's next step can move (idle's check once it has parked).
bool roomToSend(void* t) {
  const SendConn& c = *static_cast<ExecTransfer*>(t)->send;
  return P::loadAcquire(&c.ctrl->simpleHead) + kNumSteps > c.simpleStep;
}
bool dataToReceive(void* t) {
  const RecvConn& c = *static_cast<ExecTransfer*>(t)->recv;
  return P::loadAcquire(&c.ctrl->simpleTail) > c.simpleStep;
}

Status matchSelfTransfers(ExecTransfer* ops, size_t nOps, int selfRank, const HostWaitContext& ctx) {
  std::vector<ExecTransfer*> sends, recvs;
  for (size_t i = 0; i < nOps; ++i) {
    ExecTransfer& op = ops[i];
    if (op.peer != selfRank) continue;
    (op.isSend ? sends : recvs).push_back(&op);
  }
  if (sends.size() != recvs.size())
    return CC_ERROR(Status::kInvalidUsage, "%s on rank %d: %zu sends to self but %zu receives from self in one group",
                    ctx.opName, selfRank, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); ++i) {
    if (sends[i]->bytes != recvs[i]->bytes)
      return CC_ERROR(Status::kInvalidUsage,
                      "%s on rank %d: a send to self of %zu bytes is paired with a receive from self of %zu bytes",
                      ctx.opName, selfRank, sends[i]->bytes, recvs[i]->bytes);
    if (sends[i]->bytes != 0 && sends[i]->buf != recvs[i]->buf) memmove(recvs[i]->buf, sends[i]->buf, sends[i]->bytes);
    sends[i]->done = sends[i]->bytes;
    recvs[i]->done = recvs[i]->bytes;
  }
  return kOk;
}

}  // namespace

Status hostRunP2p(ExecTransfer* ops, size_t nOps, int selfRank, const HostWaitContext& ctx) {
  CC_CHECK(matchSelfTransfers(ops, nOps, selfRank, ctx));
  HostPlatform plat(ctx);
  uint32_t idleRounds = 0;
  for (;;) {
    bool moved = false;
    const ExecTransfer* waitingOn = nullptr;
    int waiting = 0;  // active transfers not done
    // Only the first unfinished transfer per (peer, direction) is active: the order of a pair's
    // transfers is the order the receiver expects them in.
    for (size_t i = 0; i < nOps; ++i) {
      ExecTransfer& op = ops[i];
      if (op.done >= op.bytes) continue;
      bool earlierPending = false;
      for (size_t j = 0; j < i && !earlierPending; ++j)
        earlierPending = ops[j].peer == op.peer && ops[j].isSend == op.isSend && ops[j].done < ops[j].bytes;
      if (earlierPending) continue;
      moved |= op.isSend ? pumpSend(op) : pumpRecv(op, plat);
      if (!isOk(plat.status())) return plat.status();
      if (op.done < op.bytes) {
        if (waitingOn == nullptr) waitingOn = &op;
        ++waiting;
      }
    }
    if (waitingOn == nullptr) return kOk;
    if (moved) {
      idleRounds = 0;
      continue;
    }
    const PeerRef& peer = waitingOn->isSend ? waitingOn->send->peer : waitingOn->recv->peer;
    // Waiting on one connection only, a long idle may sleep until that peer publishes (with more,
    // a publish on another would not wake it).
    const bool alone = waiting == 1;
    if (!plat.idle(&idleRounds, peer, waitingOn->isSend ? "buffer space (ccSend)" : "data (ccRecv)",
                   alone ? (waitingOn->isSend ? roomToSend : dataToReceive) : nullptr,
                   const_cast<ExecTransfer*>(waitingOn)))
      return plat.status();
  }
}

}  // namespace collcomm::detail
