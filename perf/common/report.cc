// The table keeps nccl-tests' layout to the character (field widths, header lines, footer
// wording), so scripts that parse nccl-tests output read ours unchanged. Lines we add
// (library choices, our host-rank summary) start with '#', which those scripts skip.
#include "common/report.h"

#include <cmath>
#include <ctime>

#include "common/json.h"

namespace collcomm::perf {
namespace {

// A time in microseconds in 7 characters, with nccl-tests' precision steps.
std::string fmtTime(double us) {
  char buf[32];
  if (us >= 10000.0)
    snprintf(buf, sizeof(buf), "%7.0f", us);
  else if (us >= 100.0)
    snprintf(buf, sizeof(buf), "%7.1f", us);
  else
    snprintf(buf, sizeof(buf), "%7.2f", us);
  return buf;
}

// A bandwidth in 6 characters: two decimals while they fit.
std::string fmtBw(double gbs) {
  char buf[32];
  if (gbs < 1000.0)
    snprintf(buf, sizeof(buf), "%6.2f", gbs);
  else if (gbs < 10000.0)
    snprintf(buf, sizeof(buf), "%6.1f", gbs);
  else
    snprintf(buf, sizeof(buf), "%6.0f", gbs);
  return buf;
}

std::string nowText() {
  char buf[64];
  time_t t = time(nullptr);
  struct tm tmv;
  localtime_r(&t, &tmv);
  strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tmv);
  return buf;
}

std::string placeJson(const PlaceResult& p, bool perIter) {
  JsonObject o;
  o.number("time", p.seconds * 1e6).number("alg_bw", p.algBw).number("bus_bw", p.busBw);
  if (p.checked)
    o.integer("nwrong", p.wrong);
  else
    o.null("nwrong");
  if (perIter && p.hasIter) {
    const double cv = p.iter.avg > 0 ? p.iter.stdev / p.iter.avg * 100.0 : 0.0;
    o.number("min_us", p.iter.min * 1e6)
        .number("max_us", p.iter.max * 1e6)
        .number("avg_us", p.iter.avg * 1e6)
        .number("p50_us", p.iter.p50 * 1e6)
        .number("p95_us", p.iter.p95 * 1e6)
        .number("p99_us", p.iter.p99 * 1e6)
        .number("stdev_us", p.iter.stdev * 1e6)
        .number("cv_pct", cv);
  }
  return o.text();
}

}  // namespace

Report::Report(const Options& opts, const Collective& coll, int argc, char** argv) : opts_(opts), coll_(coll) {
  for (int i = 0; i < argc; ++i) args_.push_back(argv[i]);
}

Report::~Report() {
  flush();
  if (ownJson_ && json_ != nullptr) fclose(json_);
}

bool Report::open(std::string* error) {
  if (opts_.jsonPath.empty()) return true;
  if (opts_.jsonPath == "-") {
    json_ = stdout;
    table_ = nullptr;
    return true;
  }
  json_ = fopen(opts_.jsonPath.c_str(), "w");
  if (json_ == nullptr) {
    *error = "cannot write JSON output to '" + opts_.jsonPath + "'";
    return false;
  }
  ownJson_ = true;
  setvbuf(json_, nullptr, _IOLBF, 0);
  return true;
}

void Report::flush() {
  if (table_ != nullptr) fflush(table_);
  if (json_ != nullptr) fflush(json_);
}

void Report::json(const std::string& line) {
  if (json_ == nullptr) return;
  fputs(line.c_str(), json_);
  fputc('\n', json_);
}

void Report::begin(const std::vector<RankInfo>& ranks, int nprocs, int nthreads) {
  int version = 0;
  ccGetVersion(&version);
  const bool byFactor = opts_.stepFactor > 1;
  const size_t step = byFactor ? opts_.stepFactor : opts_.stepBytes;
  const std::string device = opts_.gpu >= 0 ? std::to_string(opts_.gpu) : "host";  // the same on every rank
  if (table_ != nullptr) {
    FILE* f = table_;
    fprintf(f, "# collcomm-tests version %d.%d.%d collcomm-headers=%d collcomm-library=%d\n", CC_MAJOR, CC_MINOR,
            CC_PATCH, CC_VERSION_CODE, version);
    fprintf(f, "# Collective test starting: %s\n", coll_.program);
    fprintf(f,
            "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
            "validation: %d graph: %d\n",
            opts_.nThreads, opts_.nGpus, opts_.minBytes, opts_.maxBytes, step, byFactor ? "factor" : "bytes",
            opts_.warmupIters, opts_.iters, opts_.aggIters, opts_.check, opts_.graphLaunches);
    if (opts_.gpu >= 0) {
      fprintf(f, "# GPU ranks: %d process(es) x %d thread(s) = %d rank(s), each on CUDA device %d, %s\n", nprocs,
              nthreads, nprocs * nthreads, opts_.gpu, opts_.gpuName.c_str());
    } else {
      fprintf(f, "# Host ranks: %d process(es) x %d thread(s) = %d rank(s)\n", nprocs, nthreads, nprocs * nthreads);
    }
    if (opts_.blocking) fprintf(f, "# Blocking Enabled: wait for completion and barrier after each collective \n");
    if (opts_.perIter) fprintf(f, "# Per-Iteration Report: host clock per iteration; i_* use the slowest rank \n");
    if (opts_.parallelInit) fprintf(f, "# Parallel Init Enabled: threads call into ccCommInitRank concurrently \n");
    fprintf(f, "#\n# Using devices\n");
    for (const RankInfo& r : ranks) {
      fprintf(f, "#  Rank %2d Group %2d Pid %6d on %10s device %5s [cores %s]\n", r.rank, 0, r.pid, r.host,
              device.c_str(), r.cores);
    }
    printColumnHeader();
  }
  JsonObject cfg;
  std::vector<std::string> args, devices;
  for (const std::string& a : args_) args.push_back(jsonString(a));
  for (const RankInfo& r : ranks) {
    devices.push_back(JsonObject()
                          .integer("rank", r.rank)
                          .integer("group", 0)
                          .integer("pid", r.pid)
                          .str("hostname", r.host)
                          .str("device", opts_.gpu >= 0 ? "cuda:" + device : device)
                          .str("cores", r.cores)
                          .text());
  }
  cfg.str("record", "config")
      .str("program", coll_.program)
      .str("collective", coll_.name)
      .integer("collcomm_version", version)
      .str("start_time", nowText())
      .raw("args", jsonArray(args))
      .integer("nranks", static_cast<int64_t>(nprocs) * nthreads)
      .integer("nprocs", nprocs)
      .integer("nthreads", nthreads)
      .integer("minimum_bytes", static_cast<int64_t>(opts_.minBytes))
      .integer("maximum_bytes", static_cast<int64_t>(opts_.maxBytes))
      .integer(byFactor ? "step_factor" : "step_bytes", static_cast<int64_t>(step))
      .integer("warmup_iters", opts_.warmupIters)
      .integer("iterations", opts_.iters)
      .integer("aggregated_iterations", opts_.aggIters)
      .integer("run_cycles", opts_.runCycles)
      .integer("validation", opts_.check)
      .integer("average", static_cast<int>(opts_.average))
      .boolean("blocking_collectives", opts_.blocking != 0)
      .boolean("parallel_init", opts_.parallelInit != 0)
      .boolean("per_iter_timing", opts_.perIter != 0)
      .raw("devices", jsonArray(devices));
  json(cfg.text());
  flush();
}

void Report::printColumnHeader() {
  FILE* f = table_;
  const char* t = opts_.reportCpuTime ? "cputime" : "time";
  fprintf(f, "#\n");
  if (!opts_.perIter) {
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
            "", "", "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
            "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw", "#wrong");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
            "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    return;
  }
  fprintf(f,
          "# %10s  %12s  %8s  %6s  %6s                   out-of-place (+ per-iteration)                    "
          "                in-place (+ per-iteration)\n",
          "", "", "", "", "");
  fprintf(f,
          "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s %6s  %7s  %7s  %7s  "
          "%7s\n",
          "size", "count", "type", "redop", "root", t, "algbw", "busbw", "#wrong", "i_min", "i_p50", "i_p99", "i_max",
          t, "algbw", "busbw", "#wrong", "i_min", "i_p50", "i_p99", "i_max");
  fprintf(f,
          "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %5s  %7s  %7s  %7s  "
          "%7s\n",
          "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(us)", "(us)",
          "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(us)");
}

void Report::row(const Row& r) {
  if (table_ != nullptr) {
    FILE* f = table_;
    fprintf(f, "%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, typeName(r.type), r.redop, r.root);
    for (const PlaceResult* p : {&r.outOfPlace, &r.inPlace}) {
      fprintf(f, "  %s  %s  %s", fmtTime(p->seconds * 1e6).c_str(), fmtBw(p->algBw).c_str(), fmtBw(p->busBw).c_str());
      if (p->checked)
        fprintf(f, "  %5lld", static_cast<long long>(p->wrong));
      else
        fprintf(f, "  %5s", "N/A");
      if (opts_.perIter) {
        for (double v : {p->iter.min, p->iter.p50, p->iter.p99, p->iter.max})
          fprintf(f, "  %s", p->hasIter ? fmtTime(v * 1e6).c_str() : "    N/A");
      }
    }
    fputc('\n', f);
    if (r.planCaptured) {
      std::string plans;
      for (const PlanInfo& p : r.plans) {
        if (!plans.empty()) plans += "; ";
        plans +=
            "algorithm " + p.algorithm + ", protocol " + p.protocol + ", " + std::to_string(p.channels) + " channel(s)";
      }
      fprintf(f, "#  %10zu B plan: %s\n", r.bytes,
              plans.empty() ? "point-to-point transfers (no algorithm/protocol choice logged)" : plans.c_str());
    }
  }
  JsonObject o;
  o.str("record", "result")
      .integer("size", static_cast<int64_t>(r.bytes))
      .integer("count", static_cast<int64_t>(r.count))
      .str("type", typeName(r.type))
      .str("redop", r.redop)
      .integer("root", r.root)
      .raw("out_of_place", placeJson(r.outOfPlace, opts_.perIter != 0))
      .raw("in_place", placeJson(r.inPlace, opts_.perIter != 0));
  if (r.planCaptured) {
    std::vector<std::string> plans;
    for (const PlanInfo& p : r.plans) {
      plans.push_back(JsonObject()
                          .str("algorithm", p.algorithm)
                          .str("protocol", p.protocol)
                          .integer("channels", p.channels)
                          .text());
    }
    o.raw("plans", jsonArray(plans));
  }
  json(o.text());
}

void Report::end(int64_t outOfBounds, double avgBusBw) {
  if (table_ != nullptr) {
    FILE* f = table_;
    fprintf(f, "# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(outOfBounds),
            outOfBounds != 0 ? "FAILED" : "OK");
    fprintf(f, "# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, "");
    fprintf(f, "#\n# Collective test concluded: %s\n#\n", coll_.program);
  }
  json(JsonObject()
           .str("record", "summary")
           .integer("out_of_bounds", outOfBounds)
           .boolean("okay", outOfBounds == 0)
           .number("average_bus_bandwidth", avgBusBw)
           .str("end_time", nowText())
           .text());
  flush();
}

}  // namespace collcomm::perf
