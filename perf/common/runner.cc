// The sweep, as nccl-tests runs it: every rank (a thread here, in this or another process) loops
// over types, ops and roots; for each it warms up, then for every size times the out-of-place and
// the in-place call, checks them, and global rank 0 prints a row.
//
// Timing: each rank times `iters` iterations (each `-m` operations in one group) on the host clock
// and divides; -a combines the ranks' times. Every iteration uses the buffers shifted by one
// operation's footprint (wrapping within the -e allocation), as nccl-tests does, so consecutive
// calls never touch the same bytes. Checks run after timing: the receive side is poisoned, fresh
// inputs are written (new values on every check iteration, at a shifted place), one call runs,
// and every element is compared with its exactly known value.
//
// --gpu: the buffers are device memory and every rank thread has its own stream. A timed loop
// enqueues its operations back to back and then waits for the stream, as nccl-tests does; fills
// and checks go through host staging memory (common/gpu.h is the only contact with CUDA).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/collective.h"
#include "common/data.h"
#include "common/fail.h"
#include "common/gpu.h"
#include "common/options.h"
#include "common/plan_capture.h"
#include "common/report.h"
#include "common/stats.h"
#include "common/team.h"
#include "version_text.h"

namespace collcomm::perf {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// State every rank thread of this process shares.
struct Sweep {
  const Options& opts;
  const Collective& coll;
  Team& team;
  Report* report;  // global rank 0 only
  std::vector<size_t> sizes;
  std::vector<ccComm_t> comms;  // by local thread
  ccUniqueId dataId;
  // Global rank 0's running totals for the footer.
  double busBwSum = 0;
  int64_t busBwCount = 0;
  int64_t outOfBounds = 0;
};

Report* gReport = nullptr;
void flushReport() {
  if (gReport != nullptr) gReport->flush();
}

// "0-3,6" from the calling thread's CPU affinity.
std::string coreList() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "?";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE;) {
    if (!CPU_ISSET(c, &set)) {
      ++c;
      continue;
    }
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ",";
    out += e == c ? std::to_string(c) : std::to_string(c) + "-" + std::to_string(e);
    c = e + 1;
  }
  return out;
}

RankInfo myInfo(int rank) {
  RankInfo r{};
  r.rank = rank;
  r.pid = static_cast<int>(getpid());
  gethostname(r.host, sizeof(r.host) - 1);
  if (char* dot = strchr(r.host, '.')) *dot = '\0';
  snprintf(r.cores, sizeof(r.cores), "%s", coreList().c_str());
  return r;
}

// Under --gpu, the rank thread's device and stream: made first, so that the buffers are allocated
// on that device. Host ranks (gpu < 0) have neither.
struct RankDevice {
  RankDevice(const Options& o, int rank) : ordinal(o.gpu) {
    if (ordinal < 0) return;
    std::string error;
    if (!gpu::bind(ordinal, &error)) fatal("rank %d: %s", rank, error.c_str());
    // -y 1: the null stream, as nccl-tests does; the library may refuse it.
    if (!o.streamNull && !gpu::makeStream(&stream, &error)) fatal("rank %d: %s", rank, error.c_str());
  }
  ~RankDevice() { gpu::destroyStream(stream); }
  RankDevice(const RankDevice&) = delete;
  RankDevice& operator=(const RankDevice&) = delete;
  bool on() const { return ordinal >= 0; }

  const int ordinal;
  ccStream_t stream = nullptr;
};

// One buffer of the largest operation, zeroed: host memory touched by the rank that uses it, or
// device memory on the rank's device.
struct Buffer {
  Buffer(size_t bytes, const RankDevice& dev, int rank)
      : bytes_((std::max<size_t>(bytes, 64) + 4095) / 4096 * 4096), device_(dev.on()) {
    if (device_) {
      std::string error;
      void* p = nullptr;
      if (!gpu::allocate(bytes_, &p, &error)) fatal("rank %d: device buffers: %s", rank, error.c_str());
      ptr_ = static_cast<char*>(p);
      return;
    }
    ptr_ = static_cast<char*>(aligned_alloc(4096, bytes_));
    if (ptr_ == nullptr) fatal("cannot allocate %zu bytes of host memory for the buffers", bytes_);
    memset(ptr_, 0, bytes_);
  }
  ~Buffer() {
    if (device_) {
      gpu::release(ptr_);
    } else {
      free(ptr_);
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* get() const { return ptr_; }

 private:
  size_t bytes_;
  bool device_;
  char* ptr_;
};

// Host memory a --gpu rank fills and checks through; grows to the largest piece it has staged.
class Staging {
 public:
  char* get(size_t bytes) {
    if (bytes > size_) {
      data_.reset(new char[bytes]);
      size_ = bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

// Elements from a segment list's base to the end of its last segment.
size_t extent(const std::vector<Segment>& segs) {
  size_t end = 0;
  for (const Segment& s : segs) end = std::max(end, s.offset + s.length);
  return end;
}

class RankRunner {
 public:
  RankRunner(Sweep& sw, int thread)
      : sw_(sw),
        opts_(sw.opts),
        coll_(sw.coll),
        thread_(thread),
        rank_(sw.team.layout().globalRank(thread)),
        nranks_(sw.team.layout().nranks()),
        dev_(sw.opts, rank_),
        send_(sw.opts.maxBytes, dev_, rank_),
        recv_(sw.opts.maxBytes, dev_, rank_) {}

  void run();

 private:
  struct Call {
    Counts counts;
    ccDataType_t type;
    size_t elem;
    ccRedOp_t op;        // what the library is given
    int exactOp;         // what the data generators assume
    const char* opName;  // as rows show it
    int root;
  };

  Call makeCall(size_t bytes, ccDataType_t type, ccRedOp_t op, int exactOp, const char* opName, int root) const {
    Call c{};
    c.type = type;
    c.elem = typeSize(type);
    c.counts = coll_.counts(bytes / c.elem, nranks_);
    c.op = op;
    c.exactOp = exactOp;
    c.opName = opName;
    c.root = root;
    return c;
  }
  size_t footprint(const Call& c) const { return std::max(c.counts.send, c.counts.recv) * c.elem; }
  // The pointers iteration `iter` passes: shifted by whole footprints within the allocation.
  void pointers(const Call& c, bool inPlace, uint64_t iter, char** sendp, char** recvp) const {
    const size_t total = footprint(c);
    const size_t steps = total != 0 ? std::max<size_t>(opts_.maxBytes / total, 1) : 1;
    const size_t shift = total * static_cast<size_t>(iter % steps);
    char* s = send_.get() + shift;
    char* r = recv_.get() + shift;
    *sendp = inPlace ? r + c.counts.sendInPlace * c.elem * rank_ : s;
    *recvp = inPlace ? r + c.counts.recvInPlace * c.elem * rank_ : r;
  }
  void start(const Call& c, bool inPlace, uint64_t iter) {
    char *s, *r;
    pointers(c, inPlace, iter, &s, &r);
    CC_PERF_CHECK(coll_.run(s, r, c.counts.param, c.type, c.op, c.root, comm_, dev_.stream));
  }
  // --gpu: waits for the rank's stream, then asks the communicator whether a kernel failed.
  // Host operations are complete when they return: nothing to do.
  void complete(const char* after) {
    if (!dev_.on()) return;
    std::string error;
    if (!gpu::sync(dev_.stream, &error)) fatal("rank %d: after %s: %s", rank_, after, error.c_str());
    ccResult_t async = ccSuccess;
    CC_PERF_CHECK(ccCommGetAsyncError(comm_, &async));
    if (async != ccSuccess) {
      const char* why = ccGetLastError(comm_);
      fatal("rank %d: after %s the communicator reports %s: %s", rank_, after, ccGetErrorString(async),
            why != nullptr && *why != '\0' ? why : "(the library left no message)");
    }
  }
  // Host <-> device copies for fills and checks, ordered on the rank's stream.
  void upload(char* dst, const char* src, size_t bytes) {
    std::string error;
    if (!gpu::toDevice(dst, src, bytes, dev_.stream, &error)) fatal("rank %d: %s", rank_, error.c_str());
  }
  void download(char* dst, const char* src, size_t bytes) {
    std::string error;
    if (!gpu::toHost(dst, src, bytes, dev_.stream, &error)) fatal("rank %d: %s", rank_, error.c_str());
  }
  Shape shape(const Call& c, bool inPlace) const {
    return Shape{rank_, nranks_, coll_.rooted ? c.root : -1, c.counts.param, inPlace};
  }
  void fillInputs(const Call& c, bool inPlace, uint64_t iter, uint64_t seed);

  void typeOpRoot(ccDataType_t type, int opIndex, int root);
  PlaceResult bench(const Call& c, bool inPlace);
  int64_t checkOnce(const Call& c, bool inPlace, int iteration, std::string* first);
  bool isReporter() const { return sw_.report != nullptr && thread_ == 0; }

  Sweep& sw_;
  const Options& opts_;
  const Collective& coll_;
  const int thread_;
  const int rank_;
  const int nranks_;
  ccComm_t comm_ = nullptr;
  RankDevice dev_;  // before the buffers: they are allocated on its device
  Buffer send_;
  Buffer recv_;
  Staging staging_;
  uint64_t rep_ = 0;  // advances per bench, the same on every rank: check data differs every time
};

void RankRunner::run() {
  Team& team = sw_.team;
  // Creation: one thread makes every local communicator unless -p asks each thread to make its own.
  if (opts_.parallelInit) {
    ccConfig_t config = CC_CONFIG_INITIALIZER;
    config.commName = coll_.program;
    if (opts_.timeoutSec > 0) config.timeout = opts_.timeoutSec;
    if (opts_.gpu >= 0) config.device = opts_.gpu;
    CC_PERF_CHECK(ccCommInitRankConfig(&sw_.comms[thread_], nranks_, sw_.dataId, rank_, &config));
  }
  team.barrier(thread_);
  comm_ = sw_.comms[thread_];

  const std::vector<RankInfo> ranks = team.gather(thread_, myInfo(rank_));
  if (isReporter()) sw_.report->begin(ranks, team.layout().nprocs, team.layout().nthreads);

  std::vector<int> roots;
  if (!coll_.rooted) {
    roots = {-1};
  } else if (opts_.allRoots) {
    for (int r = 0; r < nranks_; ++r) roots.push_back(r);
  } else {
    roots = {opts_.root};  // in range: perfMain checked
  }
  const std::vector<int> ops = coll_.reduces ? opts_.ops : std::vector<int>{-1};
  for (ccDataType_t type : opts_.types)
    for (int op : ops)
      for (int root : roots) typeOpRoot(type, op, root);
  team.barrier(thread_);
}

void RankRunner::fillInputs(const Call& c, bool inPlace, uint64_t iter, uint64_t seed) {
  char *s, *r;
  pointers(c, inPlace, iter, &s, &r);
  std::vector<Segment> segs;
  coll_.inputs(shape(c, inPlace), &segs);
  if (!dev_.on()) {
    writeSegments(c.type, c.exactOp, seed, s, segs);
    return;
  }
  // Segment by segment, so that device memory between segments keeps what it holds.
  for (Segment seg : segs) {
    const size_t at = seg.offset * c.elem;
    const size_t bytes = seg.length * c.elem;
    seg.offset = 0;
    char* host = staging_.get(bytes);
    writeSegments(c.type, c.exactOp, seed, host, {seg});
    upload(s + at, host, bytes);
  }
}

void RankRunner::typeOpRoot(ccDataType_t type, int opIndex, int root) {
  Team& team = sw_.team;
  ccRedOp_t op = ccSum;
  int exactOp = ccSum;
  const char* opName = "none";
  if (opIndex >= 0) {
    opName = kOps[opIndex].name;
    exactOp = kOps[opIndex].exactOp;
    if (exactOp >= 0) {
      op = static_cast<ccRedOp_t>(exactOp);
    } else {
      uint64_t scalar;
      preMulScalar(type, &scalar);
      CC_PERF_CHECK(ccRedOpCreatePreMulSum(&op, &scalar, type, ccScalarHostImmediate, comm_));
    }
  }
  team.barrier(thread_);
  // Warm-up at the largest and the smallest size, as nccl-tests does.
  for (size_t bytes : {opts_.maxBytes, opts_.minBytes}) {
    const Call c = makeCall(bytes, type, op, exactOp, opName, root);
    for (int i = 0; i < opts_.warmupIters; ++i) start(c, false, static_cast<uint64_t>(i));
    complete("the warm-up");
  }
  team.barrier(thread_);

  for (int cycle = 0; opts_.runCycles == 0 || cycle < opts_.runCycles; ++cycle) {
    for (size_t bytes : sw_.sizes) {
      const Call c = makeCall(bytes, type, op, exactOp, opName, root);
      Row row;
      row.bytes = footprint(c);
      row.count = c.counts.param;
      row.type = type;
      row.redop = opName;
      row.root = root;
      row.outOfPlace = bench(c, false);
      row.inPlace = bench(c, true);
      if (isReporter()) {
        row.planCaptured = PlanCapture::active();
        if (row.planCaptured) row.plans = PlanCapture::describe(comm_, coll_.name, c.counts.param, type, root);
        for (const PlaceResult* p : {&row.outOfPlace, &row.inPlace}) {
          sw_.busBwSum += p->busBw;
          sw_.busBwCount++;
        }
        sw_.report->row(row);
      }
    }
  }
  if (exactOp < 0 && opIndex >= 0) CC_PERF_CHECK(ccRedOpDestroy(op, comm_));
}

PlaceResult RankRunner::bench(const Call& c, bool inPlace) {
  Team& team = sw_.team;
  PlaceResult res;
  ++rep_;
  if (opts_.check > 0) fillInputs(c, inPlace, 0, 0);
  start(c, inPlace, 0);  // in step with the peers before the clock starts
  complete("the operation before the timed loop");
  team.barrier(thread_);

  const int agg = opts_.aggIters;
  std::vector<double> iterTimes(opts_.perIter ? opts_.iters : 0);
  const Clock::time_point t0 = Clock::now();
  Clock::time_point last = t0;
  for (int it = 0; it < opts_.iters; ++it) {
    if (agg > 1) CC_PERF_CHECK(ccGroupStart());
    for (int a = 0; a < agg; ++a) start(c, inPlace, static_cast<uint64_t>(it) * agg + a);
    if (agg > 1) CC_PERF_CHECK(ccGroupEnd());
    // --gpu: -z and -I wait for each iteration (-I: its time is one operation then a synchronize).
    if (dev_.on() && (opts_.blocking || opts_.perIter)) complete("an iteration of the timed loop");
    if (opts_.blocking) team.barrier(thread_);
    if (opts_.perIter) {
      const Clock::time_point now = Clock::now();
      iterTimes[it] = std::chrono::duration<double>(now - last).count() / agg;
      last = now;
    }
  }
  complete("the timed loop");  // --gpu: the loop's time ends when its stream is idle
  const double mine = secondsSince(t0) / (static_cast<double>(opts_.iters) * agg);
  res.seconds = team.combine(thread_, mine, opts_.average);
  const double bytes = static_cast<double>(footprint(c));
  res.algBw = res.seconds > 0 ? bytes / 1e9 / res.seconds : 0;
  res.busBw = res.algBw * coll_.busFactor(nranks_);
  if (opts_.perIter) {
    team.maxEach(thread_, &iterTimes);
    res.iter = iterStats(iterTimes);
    res.hasIter = true;
  }

  // nccl-tests leaves the in-place result of AlltoAll and SendRecv undefined (N/A): not checked.
  res.checked = opts_.check > 0 && (!inPlace || coll_.checksInPlace);
  for (int i = 0; res.checked && i < opts_.check; ++i) {
    std::string first;
    const int64_t mineWrong = checkOnce(c, inPlace, i, &first);
    if (mineWrong != 0) {
      fprintf(stderr, "%s: rank %d: %lld wrong element(s) at %zu bytes, %s, %s, root %d, %s; first %s\n", coll_.program,
              rank_, static_cast<long long>(mineWrong), footprint(c), typeName(c.type), c.opName, c.root,
              inPlace ? "in place" : "out of place", first.c_str());
    }
    res.wrong = team.sum(thread_, mineWrong);
    const int64_t failedRanks = team.sum(thread_, mineWrong != 0 ? 1 : 0);
    if (thread_ == 0) sw_.outOfBounds += failedRanks;  // every process knows, for its exit status
    if (res.wrong != 0) break;
  }
  return res;
}

int64_t RankRunner::checkOnce(const Call& c, bool inPlace, int iteration, std::string* first) {
  // New values, and (when the allocation has room) a different place than the timed loop and the
  // previous checks used.
  const uint64_t iter = static_cast<uint64_t>(iteration) + 1;
  const uint64_t seed = (rep_ * 1024 + iter) * 1000003ull;
  char *s, *r;
  pointers(c, inPlace, iter, &s, &r);
  char* recvBase = r - (inPlace ? c.counts.recvInPlace * c.elem * rank_ : 0);
  const size_t poisoned = inPlace ? std::max(c.counts.send, c.counts.recv) : c.counts.recv;
  if (dev_.on()) {
    char* host = staging_.get(poisoned * c.elem);
    poison(c.type, host, poisoned);
    upload(recvBase, host, poisoned * c.elem);
  } else {
    poison(c.type, recvBase, poisoned);
  }
  fillInputs(c, inPlace, iter, seed);
  start(c, inPlace, iter);
  complete("a checked operation");
  std::vector<Segment> want;
  coll_.expected(shape(c, inPlace), &want);
  if (!dev_.on()) return countWrong(c.type, c.exactOp, nranks_, seed, r, want, first);
  const size_t bytes = extent(want) * c.elem;
  char* host = staging_.get(bytes);
  download(host, r, bytes);
  return countWrong(c.type, c.exactOp, nranks_, seed, host, want, first);
}

// Creates the local communicators when one thread makes them all (no -p).
void createComms(Sweep& sw) {
  const Layout& l = sw.team.layout();
  const Options& o = sw.opts;
  if (o.parallelInit) return;
  if (l.nprocs == 1 && o.timeoutSec == 0) {
    // --gpu: every rank on the same device (the library lets threads of one process share it).
    std::vector<int> devices(l.nthreads, o.gpu);
    CC_PERF_CHECK(ccCommInitAll(sw.comms.data(), l.nthreads, o.gpu >= 0 ? devices.data() : nullptr));
    return;
  }
  ccConfig_t config = CC_CONFIG_INITIALIZER;
  config.commName = sw.coll.program;
  if (o.timeoutSec > 0) config.timeout = o.timeoutSec;
  if (o.gpu >= 0) config.device = o.gpu;
  CC_PERF_CHECK(ccGroupStart());
  for (int t = 0; t < l.nthreads; ++t)
    CC_PERF_CHECK(ccCommInitRankConfig(&sw.comms[t], l.nranks(), sw.dataId, l.globalRank(t), &config));
  CC_PERF_CHECK(ccGroupEnd());
}

}  // namespace

int perfMain(int argc, char** argv, const Collective& coll) {
  setlinebuf(stdout);
  Options opts;
  std::string error;
  switch (parseOptions(argc, argv, &opts, &error)) {
    case ParseStatus::kHelp:
      printUsage(stdout, coll.program);
      return 0;
    case ParseStatus::kVersion:
      return ccPrintToolVersion(coll.program);
    case ParseStatus::kError:
      fprintf(stderr, "%s: %s\n", coll.program, error.c_str());
      printUsage(stderr, coll.program);
      return 2;
    case ParseStatus::kRun:
      break;
  }
  if (opts.gpu >= 0) {
    if (opts.nGpus != 1) {
      fprintf(stderr, "%s: -g %d: each rank thread drives one device (-g 1); use -t for more ranks\n", coll.program,
              opts.nGpus);
      return 2;
    }
    if (opts.graphLaunches != 0) {
      fprintf(stderr, "%s: -G %d: the perf binaries do not capture CUDA graphs yet\n", coll.program,
              opts.graphLaunches);
      return 2;
    }
    std::string device;
    if (!gpu::probe(opts.gpu, &device, &error)) {
      fprintf(stderr, "%s: --gpu %d: %s\n", coll.program, opts.gpu, error.c_str());
      return 2;
    }
    opts.gpuName = device;
  } else {
    if (opts.nGpus != 1) {
      fprintf(stderr, "%s: -g %d: this build has no GPU path; host ranks are one per thread (use -t)\n", coll.program,
              opts.nGpus);
      return 2;
    }
    if (opts.graphLaunches != 0) {
      fprintf(stderr, "%s: -G %d: CUDA graphs need a GPU build\n", coll.program, opts.graphLaunches);
      return 2;
    }
  }

  Team team;
  team.init(opts);
  const Layout& layout = team.layout();
  if (coll.rooted && !opts.allRoots && opts.root >= layout.nranks())
    fatal("root %d is out of range: the job has %d rank(s)", opts.root, layout.nranks());
  const bool reporter = layout.proc == 0;
  std::unique_ptr<Report> report;
  if (reporter) {
    report = std::make_unique<Report>(opts, coll, argc, argv);
    if (!report->open(&error)) fatal("%s", error.c_str());
    gReport = report.get();
    setFailureHook(flushReport);
  }

  Sweep sw{opts, coll, team, report.get(), sweepSizes(opts), std::vector<ccComm_t>(layout.nthreads, nullptr), {}};
  if (opts.parallelInit || layout.nprocs > 1 || opts.timeoutSec > 0) sw.dataId = team.shareDataId();
  createComms(sw);

  std::vector<std::thread> threads;
  for (int t = 1; t < layout.nthreads; ++t) threads.emplace_back([&sw, t] { RankRunner(sw, t).run(); });
  RankRunner(sw, 0).run();
  for (std::thread& th : threads) th.join();

  for (ccComm_t c : sw.comms)
    if (c != nullptr) CC_PERF_CHECK(ccCommDestroy(c));
  const double avgBusBw = sw.busBwCount > 0 ? sw.busBwSum / static_cast<double>(sw.busBwCount) : 0;
  if (report) report->end(sw.outOfBounds, avgBusBw);
  gReport = nullptr;
  return sw.outOfBounds != 0 ? 1 : 0;
}

}  // namespace collcomm::perf
