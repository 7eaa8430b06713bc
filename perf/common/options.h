// The perf binaries' command line: nccl-tests' options (same letters, long names, defaults and
// meanings), the names -d and -o accept, and the list of sizes a sweep visits.
// Setup tier: parsed once, before any rank exists.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "collcomm.h"

namespace collcomm::perf {

// A reduction as -o names it. exactOp is the op in tests/support/exact_data.h's terms: a
// ccRedOp_t, or -1 for PreMulSum (which the harness creates per communicator and type).
struct OpInfo {
  const char* name;
  int exactOp;
};
inline constexpr OpInfo kOps[] = {{"sum", ccSum}, {"prod", ccProd}, {"max", ccMax},
                                  {"min", ccMin}, {"avg", ccAvg},   {"mulsum", -1}};
inline constexpr int kNumOps = static_cast<int>(sizeof(kOps) / sizeof(kOps[0]));

// How -a combines the ranks' times: nccl-tests' 0=rank 0, 1=average, 2=min, 3=max.
enum class TimeCombine : int { kRank0 = 0, kAverage = 1, kMin = 2, kMax = 3 };

struct Options {
  int nThreads = 1;     // -t: threads per process, each one rank
  int nGpus = 1;        // -g: GPUs per thread (GPU builds); host ranks are one per thread
  int gpu = -1;         // --gpu: the CUDA ordinal every rank of this process runs on; -1 = host memory
  std::string gpuName;  // --gpu: the device as the report names it (perfMain fills it in)
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;  // > 1: multiply instead of adding stepBytes
  int iters = 20;
  int warmupIters = 5;
  int aggIters = 1;   // -m: operations per timed iteration, inside one group
  int runCycles = 1;  // -N: sweeps to run; 0 = until interrupted
  int check = 1;      // -c: check iterations per size (0: no check, #wrong shows N/A)
  int parallelInit = 0;
  int blocking = 0;  // -z: barrier after every operation
  int streamNull = 0;
  int timeoutSec = 0;  // -T: 0 = the library's COLLCOMM_TIMEOUT
  int graphLaunches = 0;
  int reportCpuTime = 0;
  int localRegister = 0;
  TimeCombine average = TimeCombine::kAverage;
  int perIter = 0;       // -I: per-iteration statistics columns
  std::string jsonPath;  // -J: JSON lines to this file ("-": to stdout, instead of the table)
  std::vector<int> ops;  // indices into kOps, in run order
  std::vector<ccDataType_t> types;
  int root = 0;  // -r; allRoots: every rank in turn
  bool allRoots = false;
};

enum class ParseStatus { kRun, kHelp, kVersion, kError };

// Parses argv into *out. kError leaves a one-line reason in *error.
ParseStatus parseOptions(int argc, char** argv, Options* out, std::string* error);
void printUsage(FILE* f, const char* program);

// Sizes in bytes, in sweep order (nccl-tests: from min, times the factor or plus the step, while
// not above max).
std::vector<size_t> sweepSizes(const Options& o);

// "int8", "half", ...: the names rows print (nccl-tests' type names).
const char* typeName(ccDataType_t t);
size_t typeSize(ccDataType_t t);

}  // namespace collcomm::perf
