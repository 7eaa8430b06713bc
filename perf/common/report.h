// What global rank 0 prints: nccl-tests' table (header lines, "# Using devices" block, column
// header, one row per size, footer) on stdout, and with -J the same facts as JSON lines.
// Control tier; only global rank 0 holds a Report that writes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "collcomm.h"
#include "common/collective.h"
#include "common/options.h"
#include "common/stats.h"

namespace collcomm::perf {

// One rank, as the "# Using devices" block shows it. Plain data: processes send it as bytes.
struct RankInfo {
  int rank;
  int pid;
  char host[64];
  char cores[96];  // the rank thread's CPU affinity, e.g. "0-1"
};

// A choice the library logged for one call (COLLCOMM_DEBUG=INFO, TUNING subsystem).
struct PlanInfo {
  std::string algorithm;
  std::string protocol;
  int channels = 0;
  bool operator==(const PlanInfo& o) const {
    return algorithm == o.algorithm && protocol == o.protocol && channels == o.channels;
  }
};

struct PlaceResult {
  double seconds = 0;  // per operation, combined over ranks as -a says
  double algBw = 0;    // GB/s
  double busBw = 0;    // GB/s
  bool checked = false;
  int64_t wrong = 0;  // elements, summed over ranks and check iterations
  bool hasIter = false;
  IterStats iter;  // per iteration, each the slowest rank's time
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  ccDataType_t type = ccFloat32;
  const char* redop = "none";
  int root = -1;
  PlaceResult outOfPlace;
  PlaceResult inPlace;
  bool planCaptured = false;  // COLLCOMM_DEBUG=INFO: plans holds what rank 0's calls logged
  std::vector<PlanInfo> plans;
};

class Report {
 public:
  Report(const Options& opts, const Collective& coll, int argc, char** argv);
  ~Report();
  // Opens the -J destination; false (with a reason) when it cannot be written.
  bool open(std::string* error);
  void begin(const std::vector<RankInfo>& ranks, int nprocs, int nthreads);
  void row(const Row& r);
  void end(int64_t outOfBounds, double avgBusBw);
  // Flushes both streams (before the process exits on a failure).
  void flush();

 private:
  void printColumnHeader();
  void json(const std::string& line);

  const Options& opts_;
  const Collective& coll_;
  std::vector<std::string> args_;
  FILE* table_ = stdout;  // null with -J - (JSON only on stdout)
  FILE* json_ = nullptr;
  bool ownJson_ = false;
};

}  // namespace collcomm::perf
