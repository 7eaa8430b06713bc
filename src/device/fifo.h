// Connection FIFOs: the memory two ranks share for one direction of one connection, and the views
// of it that the sending and the receiving side hold.
//
// The FIFO lives in the receiver's memory (process heap for in-process peers, a POSIX shared
// memory segment between processes). It has kNumSteps slots per protocol. The sender fills slot
// `step % kNumSteps` and publishes it; the receiver consumes it and hands the slot back:
//   Simple: sender waits simpleHead + kNumSteps > step, writes the slot, release-stores simpleTail.
//           receiver waits simpleTail > step, reads the slot, release-stores simpleHead.
//   LL:     the payload travels in 8-byte lines {data:32, flag:32} whose flag is (step+1); the
//           receiver polls the flags (no tail), then release-stores llHead for flow control. The
//           sender also stores the step's size in llBytes, for a NET proxy (see transport/net).
// NET: each side has a FIFO in its own memory and its process's proxy thread moves the steps
// between them over the network (sender FIFO -> socket -> receiver FIFO), see proxy/proxy.h.
// Both sides count steps locally (SendConn/RecvConn::*Step); the counts persist across operations,
// so an LL flag is never reused by the same slot until 2^32 steps later.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

namespace collcomm::detail {

inline constexpr int kNumSteps = 8;
inline constexpr size_t kFifoAlign = 4096;
// LL payload per line, and the most payload one LL step may carry (bounds staging buffers).
inline constexpr size_t kLlBytesPerLine = 4;
inline constexpr size_t kMaxLlStepPayload = 8192;

// Set by a side that stops taking part (abort or failure), so the other fails fast instead of
// waiting for its deadline. Besides bit 0 the word says which rank caused the departure and why,
// so a failure that travels around the ring is reported by its root cause, not by the messenger.
enum PeerState : uint32_t { kPeerActive = 0, kPeerGone = 1 };
enum GoneReason : uint32_t { kGoneFailed = 0, kGoneExited = 1, kGoneTimedOut = 2, kGoneAborted = 3 };

CC_HD inline uint32_t goneState(int culprit, GoneReason reason) {
  return kPeerGone | (static_cast<uint32_t>(reason) << 1) | (static_cast<uint32_t>(culprit + 1) << 8);
}
CC_HD inline bool isGone(uint32_t state) { return (state & kPeerGone) != 0; }
CC_HD inline int goneCulprit(uint32_t state) { return static_cast<int>(state >> 8) - 1; }
CC_HD inline GoneReason goneReason(uint32_t state) { return static_cast<GoneReason>((state >> 1) & 0x7f); }

// Control words, each on its own cache line so the two sides never write the same line.
struct FifoCtrl {
  alignas(128) uint64_t simpleTail;  // sender -> receiver
  alignas(128) uint64_t simpleBytes[kNumSteps];  // sender -> receiver: message size tag per slot
  // sender -> the NET proxy of its own process: (step+1) << 32 | payload bytes of each LL step, so
  // the proxy knows how many lines to wait for (written before the lines; unused by P2P/SHM).
  alignas(128) uint64_t llBytes[kNumSteps];
  alignas(128) uint64_t simpleHead;  // receiver -> sender
  // receiver -> sender, host only: 1 while the sender's core is far from the receiver's, so that
  // large Simple steps are best written with streaming stores (device/host/core_distance.h).
  // Written when the verdict changes; the sender reads it once per operation.
  alignas(128) uint64_t streamHint;
  alignas(128) uint64_t llHead;      // receiver -> sender
  alignas(128) uint32_t senderState;
  alignas(128) uint32_t receiverState;
  uint32_t simpleStepBytes;
  uint32_t llStepLines;
};

// Sizes of one FIFO block: ctrl, then the Simple slots, then the LL slots.
struct FifoLayout {
  size_t simpleStepBytes;
  size_t llStepLines;
  CC_HD size_t simpleOffset() const { return (sizeof(FifoCtrl) + kFifoAlign - 1) / kFifoAlign * kFifoAlign; }
  CC_HD size_t llOffset() const { return simpleOffset() + kNumSteps * simpleStepBytes; }
  CC_HD size_t totalBytes() const {
    size_t end = llOffset() + kNumSteps * llStepLines * sizeof(uint64_t);
    return (end + kFifoAlign - 1) / kFifoAlign * kFifoAlign;
  }
};

// Who is on the other side of a connection, for liveness checks and error sentences.
struct PeerRef {
  int rank = -1;
  int pid = -1;                  // the peer's pid when it shares our host, else -1
  bool sameProcess = false;
  const char* host = "";         // owned by the communicator
  uint32_t* peerState = nullptr;  // the other side's PeerState word in the FIFO
  uint32_t* ownState = nullptr;   // ours
};

// The sending side's view of a connection.
struct SendConn {
  FifoCtrl* ctrl = nullptr;
  char* simpleBuf = nullptr;
  uint64_t* llBuf = nullptr;
  uint32_t simpleStepBytes = 0;
  uint32_t llStepLines = 0;
  uint64_t simpleStep = 0;
  uint64_t llStep = 0;
  // The receiver's head words as last read: the sender reads the shared line (a cache miss, as
  // the receiver writes it every step) only when these say the FIFO may be full.
  uint64_t simpleHeadSeen = 0;
  uint64_t llHeadSeen = 0;
  PeerRef peer;
};

// The receiving side's view of a connection.
struct RecvConn {
  FifoCtrl* ctrl = nullptr;
  char* simpleBuf = nullptr;
  uint64_t* llBuf = nullptr;
  uint32_t simpleStepBytes = 0;
  uint32_t llStepLines = 0;
  uint64_t simpleStep = 0;
  uint64_t llStep = 0;
  // Host: how long a load of a line the sender just wrote takes (8 x its running average, in
  // clock ticks), and the verdict last told the sender (streamHint); device/host/core_distance.h.
  uint64_t writerLoadTicks8 = 0;
  bool writerFar = false;
  PeerRef peer;
};

// Fills a side's view from a mapped FIFO block.
template <class Conn>
CC_HD void bindFifo(Conn& conn, void* block, const FifoLayout& layout) {
  char* base = static_cast<char*>(block);
  conn.ctrl = reinterpret_cast<FifoCtrl*>(base);
  conn.simpleBuf = base + layout.simpleOffset();
  conn.llBuf = reinterpret_cast<uint64_t*>(base + layout.llOffset());
  conn.simpleStepBytes = static_cast<uint32_t>(layout.simpleStepBytes);
  conn.llStepLines = static_cast<uint32_t>(layout.llStepLines);
}

}  // namespace collcomm::detail
