// Protocols: how one step of data crosses a connection FIFO (see fifo.h).
//
// A protocol is a policy type with these static members (Platform is the executor's policy, see
// host/host_platform.h; every wait returns null when the platform gave up: abort, dead peer,
// deadline):
//   kName, kNeedsStaging
//   stepBytes(conn)                      payload bytes one step carries
//   acquireSend(plat, SendConn&)  -> void*      where to put the next step's payload
//   postSend(plat, SendConn&, void* p, bytes, tag)    publish it (bytes <= stepBytes; tag: the
//                                                      call's, call_tag.h)
//   acquireRecv(plat, RecvConn&, bytes, tag) -> const void*  the next step's payload, once it is
//                                                      there and sent by the same call
//   releaseRecv(plat, RecvConn&)                 hand the slot back to the sender
// Simple also has non-blocking readiness checks (sendReady, recvReady) for engines that poll
// several connections at once (collectives/p2p.h).
// Simple: payload written straight into the slot, one release-store per step; best for large
//   messages (one pass over memory), costs a round trip of two flags per step.
// LL: payload and flag in one 8-byte line, so no separate tail; half the bytes are flags, and the
//   data passes through a staging buffer; best for small messages (latency of one line).
#pragma once

#include "common/host_device.h"
#if !CC_DEVICE_COMPILE && defined(__x86_64__)
#include <emmintrin.h>
#endif
#include "device/call_tag.h"
#include "device/fifo.h"

namespace collcomm::detail {

// A Simple step's wait, which every thread of a block makes alike on one word (the step's head or
// tail): a platform with waitUniform may let one thread poll for all (CUDA); others waitUntil.
template <class Platform, class Pred>
CC_HD bool waitForStep(Platform& plat, Pred&& pred, const PeerRef& peer, const char* what) {
  if constexpr (requires { plat.waitUniform(pred, peer, what); })
    return plat.waitUniform(pred, peer, what);
  else
    return plat.waitUntil(pred, peer, what);
}

// Whether the platform's threads wait for Simple steps as one block (CUDA with one poller): then
// every thread enters each such wait, whatever its own copy of the connection says, since the
// copies can differ (each thread reads the peer's word at its own moment).
template <class Platform>
CC_HD bool waitsAsBlock(const Platform& plat) {
  if constexpr (requires { plat.waitsAsBlock(); })
    return plat.waitsAsBlock();
  else
    return false;
}

struct ProtoSimple {
  static constexpr const char* kName = "Simple";
  static constexpr bool kNeedsStaging = false;

  template <class Conn>
  CC_HD static size_t stepBytes(const Conn& c) { return c.simpleStepMax; }

  template <class Platform>
  CC_HD static void* acquireSend(Platform& plat, SendConn& c) {
    const uint64_t step = c.simpleStep;
    if (c.simpleHeadSeen + kNumSteps <= step || waitsAsBlock(plat)) {
      const uint64_t* head = &c.ctrl->simpleHead;
      auto room = [&] {
        return c.simpleHeadSeen + kNumSteps > step || (c.simpleHeadSeen = plat.loadAcquire(head)) + kNumSteps > step;
      };
      if (!waitForStep(plat, room, c.peer, "buffer space")) return nullptr;
    }
    return c.simpleBuf + (step % kNumSteps) * c.simpleStepBytes;
  }

  template <class Platform>
  CC_HD static void postSend(Platform& plat, SendConn& c, void*, size_t bytes, uint32_t tag) {
    plat.barrier();
    if (plat.tid() == 0) {
      plat.storeRelaxed(&c.ctrl->simpleBytes[c.simpleStep % kNumSteps], stepWord(bytes, tag));
      plat.storeRelease(&c.ctrl->simpleTail, c.simpleStep + 1);
    }
    c.simpleStep++;
    if constexpr (requires { plat.published(c.peer); }) plat.published(c.peer);
    if constexpr (requires { plat.stepPublished(c, bytes); }) plat.stepPublished(c, bytes);
  }

  // Non-blocking: whether the next send step has room now. An engine that polls several
  // connections (collectives/p2p.h) asks this, then acquireSend does not wait. The receiver's head
  // line is read only when the value last seen says the FIFO may be full.
  template <class Platform>
  CC_HD static bool sendReady(Platform& plat, SendConn& c) {
    return c.simpleHeadSeen + kNumSteps > c.simpleStep ||
           (c.simpleHeadSeen = plat.loadAcquire(&c.ctrl->simpleHead)) + kNumSteps > c.simpleStep;
  }
  // Non-blocking: whether the next receive step has arrived (then acquireRecv does not wait).
  template <class Platform>
  CC_HD static bool recvReady(Platform& plat, const RecvConn& c) {
    return plat.loadAcquire(&c.ctrl->simpleTail) > c.simpleStep;
  }

  template <class Platform>
  CC_HD static const void* acquireRecv(Platform& plat, RecvConn& c, size_t bytes, uint32_t tag) {
    const uint64_t step = c.simpleStep;
    const uint64_t* tail = &c.ctrl->simpleTail;
    if (!waitForStep(plat, [&] { return plat.loadAcquire(tail) > step; }, c.peer, "data")) return nullptr;
    // Ranks that made different calls send steps of another size or tag (call_tag.h): say so, do
    // not reduce garbage. The sender wrote the size word just now: a platform that gauges how far
    // the sender's core is may time this load (host: for large steps, where the answer matters).
    const uint64_t* sizeWord = &c.ctrl->simpleBytes[step % kNumSteps];
    uint64_t sent;
    if constexpr (requires { plat.loadFromWriter(sizeWord, c, bytes); })
      sent = plat.loadFromWriter(sizeWord, c, bytes);
    else
      sent = plat.loadRelaxed(sizeWord);
    if (!stepMatches(sent, bytes, tag)) {
      plat.failStepMismatch(c.peer, sent, stepWord(bytes, tag));
      return nullptr;
    }
    return c.simpleBuf + (step % kNumSteps) * c.simpleStepBytes;
  }

  template <class Platform>
  CC_HD static void releaseRecv(Platform& plat, RecvConn& c) {
    plat.barrier();
    if (plat.tid() == 0) plat.storeRelease(&c.ctrl->simpleHead, c.simpleStep + 1);
    c.simpleStep++;
    if constexpr (requires { plat.published(c.peer); }) plat.published(c.peer);
  }
};

struct ProtoLL {
  static constexpr const char* kName = "LL";
  static constexpr bool kNeedsStaging = true;

  template <class Conn>
  CC_HD static size_t stepBytes(const Conn& c) { return c.llStepLines * kLlBytesPerLine; }

  template <class Platform>
  CC_HD static void* acquireSend(Platform& plat, SendConn& c) {
    // Room for one more step of up to llStepLines lines: fewer than kLlSteps in flight, and the
    // ring's lines from the receiver's cursor on. The head words are read (a miss: the receiver
    // writes them every step) only when what was last seen says the ring may be full.
    const uint64_t step = c.llStep;
    auto room = [&] {
      return c.llHeadSeen + kLlSteps > step && c.llCursor.fits(c.llHeadLineSeen, c.llStepLines, c.llRingLines);
    };
    if (!room()) {
      if (!plat.waitUntil(
              [&] {
                c.llHeadSeen = plat.loadAcquire(&c.ctrl->llHead);
                c.llHeadLineSeen = plat.loadAcquire(&c.ctrl->llHeadLine);
                return room();
              },
              c.peer, "buffer space"))
        return nullptr;
    }
    return plat.sendStaging();
  }

  template <class Platform>
  CC_HD static void postSend(Platform& plat, SendConn& c, void* staging, size_t bytes,
                             uint32_t /*tag: LL has no size word*/) {
    plat.barrier();
    const uint32_t flag = static_cast<uint32_t>(c.llStep + 1);
    const size_t nLines = llLinesFor(bytes);
    uint64_t* lines = c.llBuf + c.llCursor.place(nLines, c.llRingLines);
    const unsigned char* src = static_cast<const unsigned char*>(staging);
    // For a NET proxy: how many lines this step has. No ordering needed (the proxy waits for each
    // line's flag too), so one relaxed store.
    if (plat.tid() == 0)
      plat.storeRelaxed(&c.ctrl->llBytes[c.llStep % kLlSteps], (static_cast<uint64_t>(flag) << 32) | bytes);
    auto line = [&](size_t i) {
      uint32_t data = 0;
      const size_t off = i * kLlBytesPerLine;
      // A whole line is a fixed-size copy the compiler inlines; only a step's last line may be short.
      if (bytes - off >= kLlBytesPerLine)
        __builtin_memcpy(&data, src + off, kLlBytesPerLine);
      else
        __builtin_memcpy(&data, src + off, bytes - off);
      return (static_cast<uint64_t>(flag) << 32) | data;
    };
    size_t first = plat.tid();
#if !CC_DEVICE_COMPILE && defined(__x86_64__)
    // Host: two lines per aligned 16-byte store, so a receiver polling the cache line takes it
    // from the sender half as often. The receiver checks every line's flag, so nothing depends on
    // the store being atomic; each aligned 8-byte half is written whole.
    if (first < nLines && (reinterpret_cast<uintptr_t>(&lines[first]) & 15) != 0) {
      plat.storeRelaxed(&lines[first], line(first));
      ++first;
    }
    for (; first + 1 < nLines; first += 2)
      _mm_store_si128(reinterpret_cast<__m128i*>(&lines[first]),
                      _mm_set_epi64x(static_cast<long long>(line(first + 1)), static_cast<long long>(line(first))));
#endif
    for (size_t i = first; i < nLines; i += plat.nthreads()) plat.storeRelaxed(&lines[i], line(i));
    c.llStep++;
    if constexpr (requires { plat.published(c.peer); }) plat.published(c.peer);
  }

  template <class Platform>
  CC_HD static const void* acquireRecv(Platform& plat, RecvConn& c, size_t bytes, uint32_t /*tag*/) {
    const uint32_t flag = static_cast<uint32_t>(c.llStep + 1);
    const size_t nLines = llLinesFor(bytes);
    LlCursor next = c.llCursor;  // kept only once the step is in: a failed wait moves nothing
    const uint64_t* lines = c.llBuf + next.place(nLines, c.llRingLines);
    unsigned char* dst = static_cast<unsigned char*>(plat.recvStaging());
    // Wait for the step's last line before reading the others: polling a line while the sender
    // is still writing its neighbours in the same cache line pulls that cache line back and forth
    // once per store. Once the last line is there the others usually are too (stores become
    // visible in order on x86); each is still checked below, so no ordering is assumed.
    if (nLines > 1) {
      const uint64_t* last = &lines[nLines - 1];
      if (!plat.waitUntil([&] { return static_cast<uint32_t>(plat.loadRelaxed(last) >> 32) == flag; }, c.peer, "data"))
        return nullptr;
    }
    for (size_t i = plat.tid(); i < nLines; i += plat.nthreads()) {
      uint64_t line;
      if (!plat.waitUntil([&] { line = plat.loadRelaxed(&lines[i]); return static_cast<uint32_t>(line >> 32) == flag; },
                          c.peer, "data"))
        return nullptr;
      const uint32_t data = static_cast<uint32_t>(line);
      const size_t off = i * kLlBytesPerLine;
      if (bytes - off >= kLlBytesPerLine)
        __builtin_memcpy(dst + off, &data, kLlBytesPerLine);
      else
        __builtin_memcpy(dst + off, &data, bytes - off);
    }
    plat.barrier();
    c.llCursor = next;
    return dst;
  }

  template <class Platform>
  CC_HD static void releaseRecv(Platform& plat, RecvConn& c) {
    plat.barrier();
    if (plat.tid() == 0) {
      plat.storeRelease(&c.ctrl->llHeadLine, c.llCursor.line);
      plat.storeRelease(&c.ctrl->llHead, c.llStep + 1);
    }
    c.llStep++;
    if constexpr (requires { plat.published(c.peer); }) plat.published(c.peer);
  }
};

}  // namespace collcomm::detail
