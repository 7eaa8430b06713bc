// Point-to-point batches (Send, Recv, and AlltoAll/Gather/Scatter expanded into them): a portable,
// resumable engine over the Simple protocol (device/protocols.h), instantiated by an executor with
// its platform like Primitives (host: P2pEngine<HostPlatform>, device/host/host_p2p.cc; CUDA:
// P2pEngine<CudaPlatform>, device/cuda/p2p_kernel.cu).
//
// A batch's transfers (ExecTransfer, device/transfer.h) all progress together: each round moves,
// for every active transfer, as many steps as can move now (room in the receiver's FIFO, data in
// ours) and never waits on one connection, so a batch that sends to and receives from the same
// peers cannot deadlock. Only the first unfinished transfer per (peer, direction) is active: the
// order of a pair's transfers is the order the receiver expects them in. A transfer's state is its
// `done` bytes and its connection's step counters, so a round can stop anywhere and the next one
// resumes. Sends to self pair with receives from self (the i-th with the i-th) and are copied
// locally (copySelf; the caller checks the pairing first, checkSelfPairs).
//
// Platform (the contract in device/host/host_platform.h) beyond what the protocol needs:
//   allAgree(bool) -> bool                   true when every cooperating thread passes true (a
//                                            barrier), so the threads take the same decisions
//   idle(&rounds, peer, what, ready, arg) -> bool  one round that moved nothing; false once the
//                                            wait failed. `ready` (null unless the batch waits on
//                                            one connection alone) tells whether that connection
//                                            can move: a host may sleep until its peer publishes.
//   checksHealth(rounds) -> bool             whether idle, called with that many rounds, runs its
//                                            slow path (the checks of `peer`: gone, exited, late)
// Data moves with reduceCopy and no reduction (a memcpy on the host, the block's threads on a GPU).
//
// Tier: data path. No allocation, no syscalls (the platform's slow idle path aside).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "device/fifo.h"
#include "device/protocols.h"
#include "device/reduce_copy.h"
#include "device/reduce_ops.h"
#include "device/transfer.h"

namespace collcomm::detail {

// How a batch's self transfers pair up: the i-th send to self with the i-th receive from self.
struct SelfPairs {
  size_t sends = 0;
  size_t recvs = 0;
  bool sizesDiffer = false;  // some pair's sizes differ; the first such pair's sizes follow
  size_t sendBytes = 0;
  size_t recvBytes = 0;
};

CC_HD inline SelfPairs checkSelfPairs(const ExecTransfer* ops, size_t n, int self) {
  SelfPairs p;
  size_t r = 0;  // the receive from self paired with the next send to self
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].peer != self) continue;
    if (!ops[i].isSend) {
      ++p.recvs;
      continue;
    }
    ++p.sends;
    while (r < n && (ops[r].isSend || ops[r].peer != self)) ++r;
    if (r < n && !p.sizesDiffer && ops[r].bytes != ops[i].bytes) {
      p.sizesDiffer = true;
      p.sendBytes = ops[i].bytes;
      p.recvBytes = ops[r].bytes;
    }
    if (r < n) ++r;
  }
  return p;
}

template <class Platform>
class P2pEngine {
 public:
  // What one round found.
  struct Round {
    bool moved = false;                       // some step moved
    const ExecTransfer* waitingOn = nullptr;  // the watch-th active transfer not done, else the
                                              // first (null: all done)
    int waiting = 0;                          // active transfers not done
  };

  // callTag: what every step says of the call (call_tag.h): kP2pCallTag for point-to-point batches;
  // the collective's for the algorithms that move their data as transfers (one-shot, Direct).
  CC_HD P2pEngine(Platform& plat, ExecTransfer* ops, size_t n, uint32_t callTag)
      : plat_(plat), ops_(ops), n_(n), callTag_(callTag) {}

  CC_HD bool failed() const { return failed_; }

  // Copies each send to self into its paired receive and marks both done. The pairing must hold
  // (checkSelfPairs); the two buffers may overlap, as in memmove.
  CC_HD void copySelf(int self) {
    size_t r = 0;
    for (size_t i = 0; i < n_; ++i) {
      ExecTransfer& s = ops_[i];
      if (!s.isSend || s.peer != self) continue;
      while (r < n_ && (ops_[r].isSend || ops_[r].peer != self)) ++r;
      if (r == n_) return;
      ExecTransfer& d = ops_[r++];
      moveBytes(d.buf, s.buf, s.bytes);
      s.done = s.bytes;
      d.done = d.bytes;
    }
  }

  // One round over the batch: every active transfer moves as many steps as can move now. Stops
  // at the first failure (failed()). `watch` picks which waiting transfer the round names.
  CC_HD Round advance(int watch = 0) {
    Round round;
    for (size_t i = 0; i < n_; ++i) {
      ExecTransfer& t = ops_[i];
      if (t.done >= t.bytes || earlierPending(i)) continue;
      round.moved |= t.isSend ? pumpSend(t) : pumpRecv(t);
      if (failed_) return round;
      if (t.done < t.bytes) {
        if (round.waitingOn == nullptr || round.waiting == watch) round.waitingOn = &t;
        ++round.waiting;
      }
    }
    return round;
  }

  // Rounds until every transfer is done (true) or a wait failed (false; the platform holds why).
  CC_HD bool run() {
    uint32_t idleRounds = 0;
    // Which waiting transfer the idle rounds name: the next one at each health check, so that the
    // exit of any peer the batch waits on is found, not only the first's (the others would be
    // found at the deadline). Past the last waiting one, advance names the first.
    int watch = 0;
    for (;;) {
      const Round round = advance(watch);
      if (failed_) return false;
      if (round.waitingOn == nullptr) return true;
      if (round.moved) {
        idleRounds = 0;  // `watch` stays: a peer that trickles data must not keep the others unwatched
        continue;
      }
      if (plat_.checksHealth(idleRounds)) watch = (watch + 1) % round.waiting;
      ExecTransfer& w = *const_cast<ExecTransfer*>(round.waitingOn);
      const PeerRef& peer = w.isSend ? w.send->peer : w.recv->peer;
      // Waiting on one connection only, a long idle may sleep until that peer publishes (with more,
      // a publish on another would not wake it).
      const bool alone = round.waiting == 1;
      if (!plat_.idle(&idleRounds, peer, w.isSend ? "buffer space (ccSend)" : "data (ccRecv)",
                      alone ? (w.isSend ? roomToSend : dataToReceive) : nullptr, &w)) {
        failed_ = true;
        return false;
      }
    }
  }

 private:
  using Fn = FuncSum<uint8_t>;

  // An earlier transfer with the same peer and direction is unfinished: this one waits its turn.
  CC_HD bool earlierPending(size_t i) const {
    const ExecTransfer& t = ops_[i];
    for (size_t j = 0; j < i; ++j)
      if (ops_[j].peer == t.peer && ops_[j].isSend == t.isSend && ops_[j].done < ops_[j].bytes) return true;
    return false;
  }

  CC_HD void copy(const uint8_t* src, uint8_t* dst, size_t n) {
    reduceCopy(fn_, plat_.tid(), plat_.nthreads(), n, src, false, static_cast<const uint8_t*>(nullptr), false, dst,
               static_cast<uint8_t*>(nullptr), false);
  }

  // dst = src for `bytes` bytes where the ranges may overlap: copied in pieces no longer than the
  // distance between them, in the order that reads every byte before a piece overwrites it.
  CC_HD void moveBytes(void* dstv, const void* srcv, size_t bytes) {
    auto* dst = static_cast<uint8_t*>(dstv);
    const auto* src = static_cast<const uint8_t*>(srcv);
    if (bytes == 0 || dst == src) return;
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    const size_t gap = d > s ? d - s : s - d;
    const size_t piece = gap < bytes ? gap : bytes;
    if (d < s) {
      for (size_t off = 0; off < bytes; off += piece) {
        copy(src + off, dst + off, bytes - off < piece ? bytes - off : piece);
        plat_.barrier();
      }
    } else {
      for (size_t end = bytes; end > 0;) {
        const size_t len = end < piece ? end : piece;
        end -= len;
        copy(src + end, dst + end, len);
        plat_.barrier();
      }
    }
  }

  // Moves as many steps of one send as the receiver has room for. True if anything moved.
  CC_HD bool pumpSend(ExecTransfer& t) {
    SendConn& c = *t.send;
    bool moved = false;
    while (t.done < t.bytes && plat_.allAgree(ProtoSimple::sendReady(plat_, c))) {
      const size_t step = ProtoSimple::stepBytes(c);
      const size_t len = t.bytes - t.done < step ? t.bytes - t.done : step;
      void* out = ProtoSimple::acquireSend(plat_, c);  // room was seen: does not wait
      if (out == nullptr) {
        failed_ = true;
        return moved;
      }
      copy(static_cast<const uint8_t*>(t.buf) + t.done, static_cast<uint8_t*>(out), len);
      ProtoSimple::postSend(plat_, c, out, len, callTag_);
      t.done += len;
      moved = true;
    }
    return moved;
  }

  // Moves as many steps of one receive as have arrived. True if anything moved; a step of another
  // size or call than expected fails the batch (the ranks made different calls).
  CC_HD bool pumpRecv(ExecTransfer& t) {
    RecvConn& c = *t.recv;
    bool moved = false;
    while (t.done < t.bytes && plat_.allAgree(ProtoSimple::recvReady(plat_, c))) {
      const size_t step = ProtoSimple::stepBytes(c);
      const size_t len = t.bytes - t.done < step ? t.bytes - t.done : step;
      const void* in = ProtoSimple::acquireRecv(plat_, c, len, callTag_);  // arrived: does not wait
      if (in == nullptr) {
        failed_ = true;
        return moved;
      }
      copy(static_cast<const uint8_t*>(in), static_cast<uint8_t*>(t.buf) + t.done, len);
      ProtoSimple::releaseRecv(plat_, c);
      t.done += len;
      moved = true;
    }
    return moved;
  }

  // idle's checks once it may sleep: whether the transfer's next step can move.
  CC_HD static bool roomToSend(void* t) {
    const SendConn& c = *static_cast<ExecTransfer*>(t)->send;
    return Platform::loadAcquire(&c.ctrl->simpleHead) + kNumSteps > c.simpleStep;
  }
  CC_HD static bool dataToReceive(void* t) {
    const RecvConn& c = *static_cast<ExecTransfer*>(t)->recv;
    return Platform::loadAcquire(&c.ctrl->simpleTail) > c.simpleStep;
  }

  Platform& plat_;
  ExecTransfer* ops_;
  size_t n_;
  uint32_t callTag_;
  Fn fn_;
  bool failed_ = false;
};

}  // namespace collcomm::detail
