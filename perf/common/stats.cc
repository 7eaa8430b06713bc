#include "common/stats.h"

#include <algorithm>
#include <cmath>

namespace collcomm::perf {
namespace {

// Nearest rank: the smallest sample with at least p% of the samples at or below it.
double percentile(const std::vector<double>& sorted, int p) {
  const size_t n = sorted.size();
  size_t rank = (n * static_cast<size_t>(p) + 99) / 100;
  if (rank == 0) rank = 1;
  return sorted[std::min(rank, n) - 1];
}

}  // namespace

IterStats iterStats(std::vector<double> times) {
  IterStats s;
  if (times.empty()) return s;
  std::sort(times.begin(), times.end());
  s.min = times.front();
  s.max = times.back();
  s.p50 = percentile(times, 50);
  s.p95 = percentile(times, 95);
  s.p99 = percentile(times, 99);
  double sum = 0;
  for (double t : times) sum += t;
  s.avg = sum / static_cast<double>(times.size());
  double var = 0;
  for (double t : times) var += (t - s.avg) * (t - s.avg);
  s.stdev = std::sqrt(var / static_cast<double>(times.size()));
  return s;
}

}  // namespace collcomm::perf
