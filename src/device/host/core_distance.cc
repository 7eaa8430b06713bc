// The distance clock, its calibration, and the receiver's running estimate (see core_distance.h).
#include "device/host/core_distance.h"

#include <chrono>
#include <mutex>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace collcomm::detail {
namespace {

// In nanoseconds, as this load measures them (timestamps included): one that takes less hit a cache
// of this core; an average above kFarNs means the writer's line crossed dies, below kNearNs (once
// far) it is near again; the gap keeps the verdict from flapping. Between cores that share a cache
// this load takes 33-37 ns, ~150 ns across dies (docs/lab/2026-11-24.md).
constexpr double kMissNs = 25;
constexpr double kFarNs = 90;
constexpr double kNearNs = 60;

DistanceThresholds gThresholds;
std::once_flag gCalibrated;

uint64_t steadyNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

uint64_t distanceClockStart() {
#if defined(__x86_64__)
  _mm_lfence();  // earlier instructions done before the timestamp
  return __rdtsc();
#else
  return steadyNs();
#endif
}

uint64_t distanceClockEnd() {
#if defined(__x86_64__)
  unsigned aux;
  return __rdtscp(&aux);  // waits for the earlier loads
#else
  return steadyNs();
#endif
}

const DistanceThresholds& distanceThresholds() { return gThresholds; }

void calibrateDistanceClock() {
  std::call_once(gCalibrated, [] {
    double ticksPerNs = 1.0;
#if defined(__x86_64__)
    const uint64_t ns0 = steadyNs(), t0 = distanceClockStart();
    uint64_t ns1 = ns0;
    while (ns1 - ns0 < 200000) ns1 = steadyNs();
    const uint64_t t1 = distanceClockEnd();
    ticksPerNs = static_cast<double>(t1 - t0) / static_cast<double>(ns1 - ns0);
#endif
    gThresholds.miss = static_cast<uint64_t>(kMissNs * ticksPerNs);
    gThresholds.far = static_cast<uint64_t>(kFarNs * ticksPerNs);
    gThresholds.near = static_cast<uint64_t>(kNearNs * ticksPerNs);
  });
}

void noteWriterLoad(const RecvConn& c, uint64_t ticks) {
  const DistanceThresholds& th = gThresholds;
  if (th.far == 0 || ticks < th.miss) return;  // not calibrated, or a hit
  // Average over the last ~8 misses (an outlier, say an interrupt, moves it by 1/8), kept as 8x
  // the average so that it settles exactly on a steady sample.
  DistanceWords& w = distanceWords(c.ctrl);
  uint64_t& sum8 = w.loadTicks8;
  sum8 = sum8 == 0 ? ticks * 8 : sum8 + ticks - sum8 / 8;
  const uint64_t avg = sum8 / 8;
  const bool far = w.far != 0 ? avg > th.near : avg > th.far;
  if (far != (w.far != 0)) {
    w.far = far ? 1 : 0;
    __atomic_store_n(&w.senderFar, w.far, __ATOMIC_RELAXED);
  }
}

}  // namespace collcomm::detail
