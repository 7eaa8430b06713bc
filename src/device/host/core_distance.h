// How far a peer's core is from this one, measured on the data path at no extra transfer.
//
// Two cores that share a cache hand a freshly written line over in ~35 ns; two on different dies
// (a VM whose vCPUs the hypervisor places apart, for tens of seconds at a time) take ~150 ns, and
// stream it far slower than memory does. Then a FIFO step written with plain stores, which the reader pulls out of the
// writer's cache line by line, is several times slower than one written with streaming stores,
// which goes through memory (broadcast 4 MiB 6x faster); near, streaming loses (allreduce 1 MiB
// 2x slower; docs/lab/2026-11-24.md). So the receiver times one load it makes anyway:
// the step's size word, which the sender wrote with a plain store just before publishing the
// step, so the load is a miss on a line dirty in the sender's cache (when it hits, nothing is
// learned). A running average of those loads says near or far; the receiver tells the sender
// through the connection's DistanceWords, and the sender streams its large steps while they say
// far (Primitives, plan: streamSteps) and its communicator has not found plain steps faster in this
// far phase (plan/step_stream_choice.h: one kind of far phase favours streaming, another not; the
// host executor reports the verdict to it, Executor::receiversFindFar).
//
// The words live in the platform words of the connection's FIFO block (device/fifo.h
// platformWords), so the two sides share them as they share the FIFO (one heap block within a
// process, shared memory between processes) and the portable FifoCtrl and conn views carry none.
//
// Host executor only; data path: a timestamp pair per large step, no syscalls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/fifo.h"

namespace collcomm::detail {

// Simple steps from this size on time their size word's load (ProtoSimple::acquireRecv through
// HostPlatform::loadFromWriter): two timestamps cost ~1% of such a step's copy, and smaller
// messages never stream their steps.
inline constexpr size_t kDistanceProbeMinBytes = size_t{32} << 10;

// One connection's distance words, each side's on a line of its own.
struct DistanceWords {
  // receiver -> sender: 1 while the sender's core is far from the receiver's, so that large Simple
  // steps are best written with streaming stores. Written when the verdict changes; the sender
  // reads it once per operation.
  alignas(128) uint64_t senderFar;
  // The receiver's own: how long a load of a line the sender just wrote takes (8 x its running
  // average, in clock ticks), and the verdict last stored in senderFar.
  alignas(128) uint64_t loadTicks8;
  uint64_t far;
};
static_assert(sizeof(DistanceWords) <= kPlatformWordsBytes, "the distance words outgrew the platform's words");

inline DistanceWords& distanceWords(FifoCtrl* ctrl) { return *static_cast<DistanceWords*>(platformWords(ctrl)); }

// The sender's side: whether the receiver of `c` finds this core far (one relaxed load).
inline bool receiverFindsFar(const SendConn& c) {
  return __atomic_load_n(&distanceWords(c.ctrl).senderFar, __ATOMIC_RELAXED) != 0;
}

// Timestamps for intervals of tens to hundreds of nanoseconds: the TSC on x86 (fenced so that the
// timed load falls between them), the steady clock in nanoseconds elsewhere.
uint64_t distanceClockStart();
uint64_t distanceClockEnd();

// Thresholds in clock ticks, fixed once per process by calibrateDistanceClock().
struct DistanceThresholds {
  uint64_t miss = 0;  // below: the load hit in this core's cache
  uint64_t far = 0;   // average above: the writer's core is far
  uint64_t near = 0;  // average below (once far): near again
};
const DistanceThresholds& distanceThresholds();
// Measures the clock's rate against the steady clock (~0.2 ms, once per process; setup tier).
void calibrateDistanceClock();

// The receiver's side: folds one timed load of a line the sender of `c` just wrote into its
// estimate, and tells the sender when the verdict changes.
void noteWriterLoad(const RecvConn& c, uint64_t ticks);

}  // namespace collcomm::detail
