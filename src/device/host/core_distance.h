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
// through FifoCtrl::streamHint, and the sender streams its large steps while the hint is set
// (Primitives, plan: streamSteps) and its communicator has not found plain steps faster in this
// far phase (plan/step_stream_choice.h: one kind of far phase favours streaming, another not).
//
// Host executor only; data path: a timestamp pair per large step, no syscalls.
#pragma once

#include <cstdint>

#include "device/fifo.h"

namespace collcomm::detail {

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

// Folds one timed load of a line the sender just wrote into the receiver's estimate, and stores
// the sender's hint when the verdict changes.
void noteWriterLoad(RecvConn& c, uint64_t ticks);

}  // namespace collcomm::detail
