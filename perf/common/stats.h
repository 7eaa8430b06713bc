// Summary statistics of per-iteration times (-I). Control tier.
#pragma once

#include <vector>

namespace collcomm::perf {

// All in seconds. Percentiles are nearest-rank: p99 of 20 samples is the largest.
struct IterStats {
  double min = 0, max = 0, avg = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0;
};

IterStats iterStats(std::vector<double> times);

}  // namespace collcomm::perf
