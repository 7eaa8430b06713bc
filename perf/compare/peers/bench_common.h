// bench_common.h - what the peer collective benchmarks (mpi_bench.cc, gloo_bench.cc) share: the
// command line, the sizes, how long each size runs, the exact inputs and their check, and the
// output row that perf/compare/compare_report.py and summarize.py parse.
//
// Conventions are nccl-tests' (and collcomm's perf binaries'): size is the full vector for
// allreduce and bcast, the gathered output for allgather, the input for reducescatter; time is the
// mean per operation of the slowest rank; busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n (allgather,
// reducescatter), 1 (bcast). Header-only and plain C++17, so both mpicxx and g++ build it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace peers {

// "8", "1K", "16M", "1G" (powers of 1024) -> bytes; 0 for text that is not a size.
inline size_t parseSize(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v *= 1024.0;
      ++end;
      break;
    case 'm':
    case 'M':
      v *= 1024.0 * 1024.0;
      ++end;
      break;
    case 'g':
    case 'G':
      v *= 1024.0 * 1024.0 * 1024.0;
      ++end;
      break;
    default:
      break;
  }
  return *end == '\0' ? static_cast<size_t>(v) : 0;
}

inline std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    if (comma > pos) out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

// The options both benchmarks take. -s overrides -b/-e/-f.
struct SweepArgs {
  size_t minBytes = 8;
  size_t maxBytes = size_t(256) << 20;
  size_t factor = 2;
  std::vector<size_t> sizes;
  double targetSeconds = 0.1;  // timed loop per size
  int minIters = 5;
  int maxIters = 20000;
  int warmup = -1;  // -1: 20 iterations up to 1 MiB, 2 above

  // Takes the option KEY with VALUE; false when KEY is not a sweep option or VALUE is malformed.
  bool take(const std::string& key, const std::string& value) {
    if (key == "-b") return (minBytes = parseSize(value)) > 0;
    if (key == "-e") return (maxBytes = parseSize(value)) > 0;
    if (key == "-f") return (factor = parseSize(value)) >= 2;
    if (key == "-t") return (targetSeconds = std::atof(value.c_str())) > 0;
    if (key == "-m") return (minIters = std::atoi(value.c_str())) > 0;
    if (key == "-n") return (maxIters = std::atoi(value.c_str())) > 0;
    if (key == "-w") return (warmup = std::atoi(value.c_str())) >= 0;
    if (key == "-s") {
      for (const auto& s : splitList(value)) {
        size_t b = parseSize(s);
        if (b == 0) return false;
        sizes.push_back(b);
      }
      return !sizes.empty();
    }
    return false;
  }
  void finish() {
    if (sizes.empty())
      for (size_t s = minBytes; s <= maxBytes; s *= factor) sizes.push_back(s);
    if (maxIters < minIters) maxIters = minIters;
  }
  size_t largest() const { return *std::max_element(sizes.begin(), sizes.end()); }
  int warmupFor(size_t bytes) const { return warmup >= 0 ? warmup : (bytes <= (size_t(1) << 20) ? 20 : 2); }
  // The warm-up doubles as a probe: every rank passes the slowest rank's warm-up time, so all agree.
  int itersFor(int warm, double slowestWarmupSeconds) const {
    if (warm == 0 || slowestWarmupSeconds <= 0) return minIters;
    double n = targetSeconds / slowestWarmupSeconds;
    return int(std::min<double>(std::max<double>(n, minIters), maxIters));
  }
};

inline const char* kSweepUsage =
    "  [-b minbytes] [-e maxbytes] [-f factor] [-s size,size,...]\n"
    "  [-t target_seconds_per_size] [-m miniters] [-n maxiters] [-w warmup]\n"
    "  timed iterations = clamp(target / slowest rank's mean warm-up time, miniters, maxiters)\n";

// Exact small-integer float inputs: every sum below is exact, so results compare with ==.
inline float reduceInput(int rank, size_t i) { return float((rank + 1) * int(i % 13 + 1)); }
inline float reduceExpected(int nranks, size_t i) { return float(int(i % 13 + 1)) * float(nranks * (nranks + 1) / 2); }
inline float bcastInput(size_t i) { return float(i % 17 + 1); }
inline float gatherInput(int rank, size_t i) { return float(rank * 1000 + int(i % 7)); }

inline double busFactor(const std::string& op, int nranks) {
  if (op.rfind("allreduce", 0) == 0) return 2.0 * (nranks - 1) / nranks;
  if (op == "allgather" || op == "reducescatter") return double(nranks - 1) / nranks;
  return 1.0;
}

// The table: "# library:", "# nranks:", a column header, then one row per size.
inline void printHeader(const std::string& library, int nranks, int nameWidth) {
  std::printf("# library: %s\n# nranks: %d\n", library.c_str(), nranks);
  std::printf("# %-*s %12s %12s %7s %12s %10s %10s %6s\n", nameWidth, "op", "size_B", "count/rank", "iters", "time_us",
              "algbw_GBs", "busbw_GBs", "check");
  std::fflush(stdout);
}
inline void printRow(const std::string& name, const std::string& op, int nranks, int nameWidth, size_t bytes,
                     size_t countPerRank, int iters, double seconds, bool ok) {
  double algbw = double(bytes) / seconds / 1e9;
  std::printf("  %-*s %12zu %12zu %7d %12.2f %10.3f %10.3f %6s\n", nameWidth, name.c_str(), bytes, countPerRank, iters,
              seconds * 1e6, algbw, algbw * busFactor(op, nranks), ok ? "ok" : "FAIL");
  std::fflush(stdout);
}

}  // namespace peers
