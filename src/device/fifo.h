// Connection FIFOs: the memory two ranks share for one direction of one connection, and the views
// of it that the sending and the receiving side hold.
//
// The FIFO lives in the receiver's memory (process heap for in-process peers, a POSIX shared
// memory segment between processes). It has kNumSteps Simple slots: the sender fills slot
// `step % kNumSteps` and publishes it; the receiver consumes it and hands the slot back:
//   Simple: sender waits simpleHead + kNumSteps > step, writes the slot, release-stores simpleTail.
//           receiver waits simpleTail > step, reads the slot, release-stores simpleHead.
//   LL:     the payload travels in 8-byte lines {data:32, flag:32} whose flag is (step+1); the
//           receiver polls the flags (no tail), then release-stores llHead for flow control. The
//           sender also stores the step's size in llBytes, for a NET proxy (see transport/net).
//           LL steps are not slots: each takes as many lines as it carries (LlCursor), packed one
//           after the other round a ring of kNumSteps * llStepLines lines, so small messages share
//           cache lines and a receiver reads them sequentially; up to kLlSteps are in flight.
// NET: each side has a FIFO in its own memory and its process's proxy thread moves the steps
// between them over the network (sender FIFO -> socket -> receiver FIFO), see proxy/proxy.h.
// Both sides count steps locally (SendConn/RecvConn::*Step); the counts persist across operations,
// so an LL flag is never repeated in a line until 2^32 steps later.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

namespace collcomm::detail {

inline constexpr int kNumSteps = 8;
// LL steps in flight per connection: a sender of small messages may run this far ahead, so that a
// receiver whose sender's core is far (device/host/core_distance.h) finds several steps in each
// cache line it loads instead of paying one cross-core transfer per step.
inline constexpr int kLlSteps = 64;
// LL steps start on 32-byte boundaries (4 lines): two 8-byte messages share a cache line, and the
// sender's writes to the next step rarely land in the line the receiver is reading.
inline constexpr uint32_t kLlStepAlignLines = 4;
inline constexpr size_t kFifoAlign = 4096;
// LL payload per line, and the most payload one LL step may carry (bounds staging buffers).
inline constexpr size_t kLlBytesPerLine = 4;
inline constexpr size_t kMaxLlStepPayload = 8192;
// The lines an LL step of `bytes` payload bytes fills.
CC_HD inline size_t llLinesFor(size_t bytes) { return (bytes + kLlBytesPerLine - 1) / kLlBytesPerLine; }

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
// How failure sentences say it: "rank 3 exited".
inline const char* goneReasonText(GoneReason reason) {
  static const char* const kWhy[] = {"failed", "exited", "timed out", "was aborted"};
  return kWhy[static_cast<uint32_t>(reason) < 4 ? static_cast<uint32_t>(reason) : 0];
}

// Where a host waiter that has waited long sleeps (HostPlatform::waitUntil) and how whoever
// publishes what it waits for wakes it: the waiter sets `parked`, checks once more, and sleeps on
// `rings` (a futex word); a publisher that sees `parked` bumps `rings` and wakes it. Publishers
// read `parked` after every publish, so it sits on a line of its own that changes only when a
// waiter parks. Unused on GPUs (their waits never sleep).
struct Doorbell {
  uint32_t parked;
  uint32_t rings;
};

// Control words, each on its own cache line so the two sides never write the same line.
struct FifoCtrl {
  alignas(128) uint64_t simpleTail;  // sender -> receiver
  alignas(128) uint64_t simpleBytes[kNumSteps];  // sender -> receiver: each slot's size word (call_tag.h)
  // sender -> the NET proxy of its own process: (step+1) << 32 | payload bytes of each LL step, so
  // the proxy knows how many lines to wait for (written before the lines; unused by P2P/SHM).
  alignas(128) uint64_t llBytes[kLlSteps];
  alignas(128) uint64_t simpleHead;  // receiver -> sender
  alignas(128) uint64_t llHead;      // receiver -> sender: LL steps consumed
  uint64_t llHeadLine;               // receiver -> sender: its LlCursor::line after them (stored first)
  alignas(128) Doorbell dataBell;   // the receiver parks here; the sender rings after publishing data
  alignas(128) Doorbell spaceBell;  // the sender parks here; the receiver rings after freeing slots
  alignas(128) uint32_t senderState;
  alignas(128) uint32_t receiverState;
  uint32_t simpleStepBytes;
  uint32_t llStepLines;
};

// After FifoCtrl each FIFO block keeps kPlatformWordsBytes for the executor's platform: words about
// the connection that only it reads and writes, placed and shared like the FIFO (the host's:
// device/host/core_distance.h; GPUs use none), zeroed with the block. The portable code never
// touches them; they cost no memory (ctrl and they fill less than the block's first kFifoAlign).
inline constexpr size_t kPlatformWordsBytes = 512;
static_assert(sizeof(FifoCtrl) + kPlatformWordsBytes <= kFifoAlign, "ctrl and the platform's words outgrew a page");
CC_HD inline void* platformWords(FifoCtrl* ctrl) { return ctrl + 1; }

// Sizes of one FIFO block: ctrl and the platform's words, then the Simple slots, then the LL slots.
struct FifoLayout {
  size_t simpleStepBytes;
  size_t llStepLines;
  CC_HD size_t simpleOffset() const {
    return (sizeof(FifoCtrl) + kPlatformWordsBytes + kFifoAlign - 1) / kFifoAlign * kFifoAlign;
  }
  CC_HD size_t llOffset() const { return simpleOffset() + kNumSteps * simpleStepBytes; }
  CC_HD size_t llRingLines() const { return kNumSteps * llStepLines; }
  CC_HD size_t totalBytes() const {
    size_t end = llOffset() + llRingLines() * sizeof(uint64_t);
    return (end + kFifoAlign - 1) / kFifoAlign * kFifoAlign;
  }
};

// Where the LL steps of one side go in the ring, step after step (sender, receiver and NET proxies
// each keep one and advance it with the same sizes, so they agree): `line` counts lines from the
// start of time, ring wrap padding included; `offset` is line modulo the ring, kept apart so no
// step divides.
struct LlCursor {
  uint64_t line = 0;
  uint32_t offset = 0;
  // The lines a step of nLines takes in the ring: whole 32-byte granules.
  CC_HD static uint32_t roundedLines(size_t nLines) {
    return static_cast<uint32_t>((nLines + kLlStepAlignLines - 1) / kLlStepAlignLines * kLlStepAlignLines);
  }
  // The first line (ring offset) of a step of nLines lines, and advances past it. A step never
  // wraps: one that would is placed at the ring's start, the lines before the end left unused.
  CC_HD uint32_t place(size_t nLines, uint32_t ringLines) {
    const uint32_t n = roundedLines(nLines);
    if (offset + n > ringLines) {
      line += ringLines - offset;
      offset = 0;
    }
    const uint32_t start = offset;
    offset += n;
    line += n;
    return start;
  }
  // True when a step of up to maxLines lines placed next ends at most ringLines after
  // consumedLine (the receiver's cursor line: every line before it has been read), so it
  // overwrites nothing the receiver still needs. Conservative by up to one step's padding.
  CC_HD bool fits(uint64_t consumedLine, uint32_t maxLines, uint32_t ringLines) const {
    return line + 2 * static_cast<uint64_t>(roundedLines(maxLines)) <= consumedLine + ringLines;
  }
};

// Who is on the other side of a connection, for liveness checks and error sentences.
struct PeerRef {
  int rank = -1;
  int pid = -1;                  // the peer's pid when it shares our host, else -1
  bool sameProcess = false;
  // The proxy thread moves the connection's steps (NET): it lands and publishes every step the
  // peer sent before it reports the peer's departure (net_transport.cc).
  bool proxied = false;
  const char* host = "";         // owned by the communicator
  uint32_t* peerState = nullptr;  // the other side's PeerState word in the FIFO
  uint32_t* ownState = nullptr;   // ours
  Doorbell* waitBell = nullptr;   // where this side parks (its FIFO's data or space doorbell)
  Doorbell* wakeBell = nullptr;   // the other side's, rung after this side publishes
};

// The sending side's view of a connection.
struct SendConn {
  FifoCtrl* ctrl = nullptr;
  char* simpleBuf = nullptr;
  uint64_t* llBuf = nullptr;
  uint32_t simpleStepBytes = 0;  // a Simple slot's size (the stride between slots)
  uint32_t simpleStepMax = 0;    // the payload a Simple step carries at most (<= the slot)
  uint32_t llStepLines = 0;
  uint64_t simpleStep = 0;
  uint64_t llStep = 0;
  // The receiver's head words as last read: the sender reads the shared line (a cache miss, as
  // the receiver writes it every step) only when these say the FIFO may be full.
  uint64_t simpleHeadSeen = 0;
  uint64_t llHeadSeen = 0;
  uint64_t llHeadLineSeen = 0;
  uint32_t llRingLines = 0;
  LlCursor llCursor;
  PeerRef peer;
};

// The receiving side's view of a connection.
struct RecvConn {
  FifoCtrl* ctrl = nullptr;
  char* simpleBuf = nullptr;
  uint64_t* llBuf = nullptr;
  uint32_t simpleStepBytes = 0;  // as in SendConn
  uint32_t simpleStepMax = 0;
  uint32_t llStepLines = 0;
  uint64_t simpleStep = 0;
  uint64_t llStep = 0;
  uint32_t llRingLines = 0;
  LlCursor llCursor;
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
  conn.simpleStepMax = conn.simpleStepBytes;  // the connection or the ring may choose less (connect.h)
  conn.llStepLines = static_cast<uint32_t>(layout.llStepLines);
  conn.llRingLines = static_cast<uint32_t>(layout.llRingLines());
}

}  // namespace collcomm::detail
