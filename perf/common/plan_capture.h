// The library's choice per size at COLLCOMM_DEBUG=INFO. The library logs one TUNING line per
// collective call ("AllReduce rank 0: 1024 bytes, float, algorithm Ring, protocol LL, 1
// channel(s)"); a sweep makes thousands. When the user asks for INFO (or TRACE) logs on stderr,
// the harness turns the TUNING subsystem on, reads stderr through a pipe, forwards every other
// line unchanged, and condenses rank 0's TUNING lines into one "plan" per table row.
//
// Tiers: install/uninstall are setup (main thread, before the first and after the last library
// call); collect is control (global rank 0's thread, between sizes). While capture is on,
// every log line costs the logging thread a write to a pipe: measure without INFO.
#pragma once

#include <vector>

#include "common/report.h"

namespace collcomm::perf {

class PlanCapture {
 public:
  // Turns capture on if COLLCOMM_DEBUG is INFO or TRACE and COLLCOMM_DEBUG_FILE is unset.
  // Must run before the first library call (the library reads its log settings once).
  static void install();
  static bool active();
  // The distinct plans `rank` logged since the previous collect(), once every line written before
  // this call has been read.
  static std::vector<PlanInfo> collect(int rank);
  // Puts stderr back and stops the reader. Safe to call twice, and when capture is off.
  static void uninstall();
};

}  // namespace collcomm::perf
