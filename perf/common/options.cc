// nccl-tests' command line, parsed with getopt_long.
#include "common/options.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "device/dtypes.h"

namespace collcomm::perf {
namespace {

using collcomm::detail::dtypeName;
using collcomm::detail::dtypeSize;

// Names -d accepts beyond the ones rows print (NCCL's enum aliases and the long float names).
struct TypeAlias {
  const char* name;
  ccDataType_t type;
};
constexpr TypeAlias kTypeAliases[] = {{"char", ccInt8},           {"int", ccInt32},          {"float16", ccFloat16},
                                      {"float32", ccFloat32},     {"float64", ccFloat64},    {"bf16", ccBfloat16},
                                      {"fp8_e4m3", ccFloat8e4m3}, {"fp8_e5m2", ccFloat8e5m2}};

// "32M", "1.5K", "4096": bytes, with K/M/G meaning powers of 1024 (nccl-tests' rule).
bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno != 0 || !(v >= 0)) return false;
  double unit = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'K':
      case 'k':
        unit = 1024.0;
        break;
      case 'M':
      case 'm':
        unit = 1024.0 * 1024;
        break;
      case 'G':
      case 'g':
        unit = 1024.0 * 1024 * 1024;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'B' || *end == 'b') ++end;  // "32MB" reads as 32M
    if (*end != '\0') return false;
  }
  const double bytes = v * unit;
  if (bytes > 1e18) return false;
  *out = static_cast<size_t>(bytes);
  return true;
}

bool parseInt(const char* text, long lo, long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = strtol(text, &end, 0);
  if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseTypes(const char* text, std::vector<ccDataType_t>* out) {
  out->clear();
  if (strcmp(text, "all") == 0) {
    for (int t = 0; t < ccNumTypes; ++t) out->push_back(static_cast<ccDataType_t>(t));
    return true;
  }
  for (int t = 0; t < ccNumTypes; ++t) {
    if (strcmp(text, dtypeName(static_cast<ccDataType_t>(t))) == 0) {
      out->push_back(static_cast<ccDataType_t>(t));
      return true;
    }
  }
  for (const TypeAlias& a : kTypeAliases) {
    if (strcmp(text, a.name) == 0) {
      out->push_back(a.type);
      return true;
    }
  }
  return false;
}

bool parseOps(const char* text, std::vector<int>* out) {
  out->clear();
  for (int o = 0; o < kNumOps; ++o) {
    if (strcmp(text, "all") == 0 || strcmp(text, kOps[o].name) == 0) out->push_back(o);
  }
  return !out->empty();
}

// --version has no letter, so that none of nccl-tests' is taken.
constexpr int kVersionOption = 0x100;
// --gpu has no letter either: nccl-tests' -G (graph launches) and -g (GPUs per thread) are taken.
constexpr int kGpuOption = 0x101;

// Long names as nccl-tests spells them, plus our additions (-J, -I, --version, --gpu).
const option kLongOptions[] = {{"nthreads", required_argument, nullptr, 't'},
                               {"ngpus", required_argument, nullptr, 'g'},
                               {"minbytes", required_argument, nullptr, 'b'},
                               {"maxbytes", required_argument, nullptr, 'e'},
                               {"stepbytes", required_argument, nullptr, 'i'},
                               {"stepfactor", required_argument, nullptr, 'f'},
                               {"iters", required_argument, nullptr, 'n'},
                               {"agg_iters", required_argument, nullptr, 'm'},
                               {"warmup_iters", required_argument, nullptr, 'w'},
                               {"run_cycles", required_argument, nullptr, 'N'},
                               {"parallel_init", required_argument, nullptr, 'p'},
                               {"check", required_argument, nullptr, 'c'},
                               {"op", required_argument, nullptr, 'o'},
                               {"datatype", required_argument, nullptr, 'd'},
                               {"root", required_argument, nullptr, 'r'},
                               {"blocking", required_argument, nullptr, 'z'},
                               {"stream_null", required_argument, nullptr, 'y'},
                               {"timeout", required_argument, nullptr, 'T'},
                               {"cudagraph", required_argument, nullptr, 'G'},
                               {"report_cputime", required_argument, nullptr, 'C'},
                               {"average", required_argument, nullptr, 'a'},
                               {"local_register", required_argument, nullptr, 'R'},
                               {"output_file", required_argument, nullptr, 'J'},
                               {"per_iter_timing", required_argument, nullptr, 'I'},
                               {"help", no_argument, nullptr, 'h'},
                               {"version", no_argument, nullptr, kVersionOption},
                               {"gpu", required_argument, nullptr, kGpuOption},
                               {nullptr, 0, nullptr, 0}};
const char kShortOptions[] = "+t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:G:C:a:R:J:I:h";

}  // namespace

const char* typeName(ccDataType_t t) { return dtypeName(t); }
size_t typeSize(ccDataType_t t) { return dtypeSize(t); }

void printUsage(FILE* f, const char* program) {
  fprintf(f,
          "USAGE: %s\n"
          "\t[-t,--nthreads <num threads>]  threads per process, each one rank (default 1)\n"
          "\t[-g,--ngpus <gpus per thread>]  GPU builds only; host ranks are one per thread (default 1)\n"
          "\t[-b,--minbytes <min size in bytes>]  K/M/G suffixes are powers of 1024 (default 32M)\n"
          "\t[-e,--maxbytes <max size in bytes>]  (default 32M)\n"
          "\t[-i,--stepbytes <increment size>]  (default 1M)\n"
          "\t[-f,--stepfactor <increment factor>]  multiply instead of adding -i (default: disabled)\n"
          "\t[-n,--iters <iteration count>]  timed iterations per size (default 20)\n"
          "\t[-m,--agg_iters <aggregated iteration count>]  operations per iteration, in one group (default 1)\n"
          "\t[-w,--warmup_iters <warmup iteration count>]  (default 5)\n"
          "\t[-N,--run_cycles <cycle count>]  run and print the sweep this many times; 0 = forever (default 1)\n"
          "\t[-p,--parallel_init <0/1>]  each thread creates its own communicator (default 0)\n"
          "\t[-c,--check <check iteration count>]  verified iterations per size; 0 = none (default 1)\n"
          "\t[-o,--op <sum/prod/min/max/avg/mulsum/all>]  reduction (default sum)\n"
          "\t[-d,--datatype <nccltype/all>]  int8 uint8 int32 uint32 int64 uint64 half float double bfloat16\n"
          "\t                                f8e4m3 f8e5m2, or char int float16 float32 float64 (default float)\n"
          "\t[-r,--root <root/all>]  root of rooted collectives (default 0)\n"
          "\t[-z,--blocking <0/1>]  barrier after every operation (default 0)\n"
          "\t[-y,--stream_null <0/1>]  accepted; host operations take no stream\n"
          "\t[-T,--timeout <time in seconds>]  longest wait of any operation before it fails (default: "
          "COLLCOMM_TIMEOUT)\n"
          "\t[-G,--cudagraph <num graph launches>]  GPU builds only; must be 0 here\n"
          "\t[-C,--report_cputime <0/1>]  label the time column cputime (host time is CPU time)\n"
          "\t[-a,--average <0/1/2/3>]  time reported: 0=rank 0, 1=average, 2=min, 3=max over ranks (default 1)\n"
          "\t[-R,--local_register <0/1>]  accepted; host buffers need no registration\n"
          "\t[-J,--output_file <file>]  also write JSON lines (one object per line) to <file>; '-' = stdout only\n"
          "\t[-I,--per_iter_timing <0/1>]  add per-iteration latency columns: min, p50, p99, max (default 0)\n"
          "\t[-h,--help]\n"
          "\t[--version]  the collcomm version this binary runs with\n"
          "\t[--gpu <ordinal>]  every rank of this process runs a GPU communicator on CUDA device <ordinal>\n"
          "\t                   (device buffers, a stream per rank; a timed loop enqueues -n iterations, then\n"
          "\t                   synchronizes). Default: host memory. Builds without CUDA refuse it\n"
          "Ranks = processes (from ccrun, mpirun or srun) x threads. COLLCOMM_DEBUG=INFO adds the algorithm,\n"
          "protocol and channels the library chose for each size. Exit status: 0 when every check passed.\n",
          program);
}

ParseStatus parseOptions(int argc, char** argv, Options* o, std::string* error) {
  *o = Options{};
  o->types = {ccFloat32};
  o->ops = {0};
  optind = 1;
  opterr = 0;
  auto bad = [&](const char* what, const char* arg) {
    *error = std::string("invalid ") + what + " '" + (arg ? arg : "") + "'";
    return ParseStatus::kError;
  };
  int c;
  while ((c = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr)) != -1) {
    const char* a = optarg;
    switch (c) {
      case 't':
        if (!parseInt(a, 1, 1024, &o->nThreads)) return bad("thread count (-t)", a);
        break;
      case 'g':
        if (!parseInt(a, 1, 1024, &o->nGpus)) return bad("GPUs per thread (-g)", a);
        break;
      case 'b':
        if (!parseSize(a, &o->minBytes)) return bad("size for 'minbytes' (-b)", a);
        break;
      case 'e':
        if (!parseSize(a, &o->maxBytes)) return bad("size for 'maxbytes' (-e)", a);
        break;
      case 'i':
        if (!parseSize(a, &o->stepBytes)) return bad("step size (-i)", a);
        break;
      case 'f': {
        int f;
        if (!parseInt(a, 1, 1 << 20, &f)) return bad("step factor (-f)", a);
        o->stepFactor = static_cast<size_t>(f);
        break;
      }
      case 'n':
        if (!parseInt(a, 1, 1 << 30, &o->iters)) return bad("iteration count (-n)", a);
        break;
      case 'm':
        if (!parseInt(a, 1, 1 << 20, &o->aggIters)) return bad("aggregation count (-m)", a);
        break;
      case 'w':
        if (!parseInt(a, 0, 1 << 30, &o->warmupIters)) return bad("warmup count (-w)", a);
        break;
      case 'N':
        if (!parseInt(a, 0, 1 << 30, &o->runCycles)) return bad("cycle count (-N)", a);
        break;
      case 'p':
        if (!parseInt(a, 0, 1, &o->parallelInit)) return bad("value for -p (0/1)", a);
        break;
      case 'c':
        if (!parseInt(a, 0, 1 << 20, &o->check)) return bad("check count (-c)", a);
        break;
      case 'o':
        if (!parseOps(a, &o->ops)) return bad("op (-o: sum/prod/min/max/avg/mulsum/all)", a);
        break;
      case 'd':
        if (!parseTypes(a, &o->types)) return bad("datatype (-d)", a);
        break;
      case 'r':
        if (strcmp(a, "all") == 0) {
          o->allRoots = true;
        } else {
          if (!parseInt(a, 0, 1 << 30, &o->root)) return bad("root (-r)", a);
          o->allRoots = false;
        }
        break;
      case 'z':
        if (!parseInt(a, 0, 1, &o->blocking)) return bad("value for -z (0/1)", a);
        break;
      case 'y':
        if (!parseInt(a, 0, 1, &o->streamNull)) return bad("value for -y (0/1)", a);
        break;
      case 'T':
        if (!parseInt(a, 0, 1 << 30, &o->timeoutSec)) return bad("timeout (-T)", a);
        break;
      case 'G':
        if (!parseInt(a, 0, 1 << 20, &o->graphLaunches)) return bad("graph launches (-G)", a);
        break;
      case 'C':
        if (!parseInt(a, 0, 1, &o->reportCpuTime)) return bad("value for -C (0/1)", a);
        break;
      case 'a': {
        int v;
        if (!parseInt(a, 0, 3, &v)) return bad("value for -a (0/1/2/3)", a);
        o->average = static_cast<TimeCombine>(v);
        break;
      }
      case 'R':
        if (!parseInt(a, 0, 2, &o->localRegister)) return bad("value for -R (0/1)", a);
        break;
      case 'J':
        if (a == nullptr || *a == '\0') return bad("file for -J", a);
        o->jsonPath = a;
        break;
      case 'I':
        if (!parseInt(a, 0, 1, &o->perIter)) return bad("value for -I (0/1)", a);
        break;
      case 'h':
        return ParseStatus::kHelp;
      case kVersionOption:
        return ParseStatus::kVersion;
      case kGpuOption:
        if (!parseInt(a, 0, 1023, &o->gpu)) return bad("CUDA device ordinal (--gpu)", a);
        break;
      default: {
        char opt[3] = {'-', static_cast<char>(optopt), '\0'};
        if (optopt == kGpuOption) {
          *error = "option '--gpu' needs a value";
        } else if (optopt == 0) {
          *error = std::string("unknown option '") + argv[optind - 1] + "'";
        } else if (strchr(kShortOptions, optopt) != nullptr) {
          *error = std::string("option '") + opt + "' needs a value";
        } else {
          *error = std::string("unknown option '") + opt + "'";
        }
        return ParseStatus::kError;
      }
    }
  }
  if (optind < argc) {
    *error = std::string("unexpected argument '") + argv[optind] + "'";
    return ParseStatus::kError;
  }
  if (o->minBytes > o->maxBytes) {
    *error = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(o->minBytes) + " > " +
             std::to_string(o->maxBytes);
    return ParseStatus::kError;
  }
  if (o->stepFactor <= 1 && o->stepBytes == 0 && o->minBytes != o->maxBytes) {
    *error = "a step of 0 bytes (-i 0) without a factor (-f) would never reach maxbytes";
    return ParseStatus::kError;
  }
  return ParseStatus::kRun;
}

std::vector<size_t> sweepSizes(const Options& o) {
  std::vector<size_t> sizes;
  for (size_t s = o.minBytes; s <= o.maxBytes;) {
    sizes.push_back(s);
    size_t next = o.stepFactor > 1 ? s * o.stepFactor : s + o.stepBytes;
    if (next <= s) break;  // 0 times a factor, or a 0 step: one size only
    s = next;
  }
  return sizes;
}

}  // namespace collcomm::perf
