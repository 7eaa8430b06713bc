// gloo_bench.cc - Gloo's float32 sum allreduce over its TCP transport, timed the way mpi_bench.cc
// times MPI (bench_common.h: warm-up sizes the loop, slowest rank's mean per operation, exact check).
//
// The program is its own launcher: it forks -p ranks (each pinned to CPU rank % ncpu with -B 1,
// before Gloo starts its device thread), which meet through a FileStore in a fresh temporary
// directory and connect a full mesh over 127.0.0.1.
//
// Algorithms (-a, comma separated):
//   ring, bcube   gloo::allreduce() with AllreduceOptions (ring is the default, PyTorch's
//                 ProcessGroupGloo path); out of place; options built inside the timed loop, as a
//                 caller does on every call.
//   legacy_ring, legacy_ring_chunked, legacy_hd, legacy_bcube
//                 the older gloo::Allreduce* classes, built once per size outside the timed loop
//                 (registered buffers); in place, so their check re-runs once on fresh inputs.
//
// Build: g++ -O2 -std=c++17 -pthread -o gloo_bench gloo_bench.cc -lgloo
// Run:   ./gloo_bench -p 2 -B 1 -a ring -s 8,1K,1M
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "bench_common.h"

namespace {

constexpr int kNameWidth = 26;
const char* const kAlgos[] = {"ring", "bcube", "legacy_ring", "legacy_ring_chunked", "legacy_hd", "legacy_bcube"};

struct Args {
  int nranks = 2;
  bool bind = true;
  std::vector<std::string> algos = {"ring"};
  peers::SweepArgs sweep;
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: gloo_bench [-p nranks] [-B 0|1] [-a algo,...]\n%s  algos:", peers::kSweepUsage);
  for (const char* a : kAlgos) std::fprintf(stderr, " %s", a);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void sumFloats(void* out, const void* a, const void* b, size_t n) { gloo::sum<float>(out, a, b, n); }

void maxDoubles(void* out, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; i++)
    static_cast<double*>(out)[i] = std::max(static_cast<const double*>(a)[i], static_cast<const double*>(b)[i]);
}

class Rank {
 public:
  Rank(const Args& args, int rank, std::shared_ptr<gloo::Context> ctx)
      : args_(args), rank_(rank), n_(ctx->size), ctx_(std::move(ctx)) {}

  void barrier() {
    gloo::BarrierOptions opts(ctx_);
    opts.setTag(tag_++);
    gloo::barrier(opts);
  }

  double slowest(double v) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(&v, 1);
    opts.setReduceFunction(&maxDoubles);
    opts.setTag(tag_++);
    gloo::allreduce(opts);
    return v;
  }

  // Runs every size of ALGO; returns how many sizes gave a wrong result.
  int sweep(const std::string& algo) {
    const bool optionsApi = algo == "ring" || algo == "bcube";
    const size_t capacity = std::max<size_t>(args_.sweep.largest() / sizeof(float), 1);
    std::vector<float> in(capacity), out(capacity);
    int failures = 0;
    for (size_t requested : args_.sweep.sizes) {
      const size_t count = std::max<size_t>(requested / sizeof(float), 1);
      const size_t bytes = count * sizeof(float);
      auto fill = [&] {
        for (size_t i = 0; i < count; i++) in[i] = peers::reduceInput(rank_, i);
        std::fill(out.begin(), out.begin() + count, -1.0f);
      };
      fill();
      std::unique_ptr<gloo::Algorithm> legacy = makeLegacy(algo, in.data(), count);
      auto run = [&] {
        if (!optionsApi) return legacy->run();  // in place on `in`: values grow, never denormal
        gloo::AllreduceOptions opts(ctx_);
        opts.setAlgorithm(algo == "ring" ? gloo::AllreduceOptions::Algorithm::RING
                                         : gloo::AllreduceOptions::Algorithm::BCUBE);
        opts.setInput(in.data(), count);
        opts.setOutput(out.data(), count);
        opts.setReduceFunction(&sumFloats);
        opts.setTag(tag_++);
        gloo::allreduce(opts);
      };
      int warm = args_.sweep.warmupFor(bytes);
      barrier();
      double t = now();
      for (int i = 0; i < warm; i++) run();
      int iters = args_.sweep.itersFor(warm, slowest((now() - t) / std::max(warm, 1)));
      barrier();
      t = now();
      for (int i = 0; i < iters; i++) run();
      double perOp = slowest((now() - t) / iters);
      if (!optionsApi) {
        fill();
        barrier();
        run();
      }
      const float* result = optionsApi ? out.data() : in.data();
      long wrong = 0;
      for (size_t i = 0; i < count; i++) wrong += result[i] != peers::reduceExpected(n_, i);
      bool ok = slowest(double(wrong)) == 0;
      failures += !ok;
      if (rank_ == 0) peers::printRow("allreduce:" + algo, "allreduce", n_, kNameWidth, bytes, count, iters, perOp, ok);
    }
    return failures;
  }

 private:
  std::unique_ptr<gloo::Algorithm> makeLegacy(const std::string& algo, float* data, size_t count) {
    std::vector<float*> ptrs = {data};
    int n = int(count);
    if (algo == "legacy_ring") return std::make_unique<gloo::AllreduceRing<float>>(ctx_, ptrs, n);
    if (algo == "legacy_ring_chunked") return std::make_unique<gloo::AllreduceRingChunked<float>>(ctx_, ptrs, n);
    if (algo == "legacy_hd") return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx_, ptrs, n);
    if (algo == "legacy_bcube") return std::make_unique<gloo::AllreduceBcube<float>>(ctx_, ptrs, n);
    return nullptr;
  }

  const Args& args_;
  const int rank_;
  const int n_;
  std::shared_ptr<gloo::Context> ctx_;
  uint32_t tag_ = 1;
};

int runRank(const Args& args, int rank, const std::string& storeDir) {
  if (args.bind) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(int(rank % std::max(sysconf(_SC_NPROCESSORS_ONLN), 1L)), &set);
    sched_setaffinity(0, sizeof(set), &set);
  }
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  attr.ai_family = AF_INET;
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore files(storeDir);
  gloo::rendezvous::PrefixStore store("gloo_bench", files);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, args.nranks);
  ctx->setTimeout(std::chrono::seconds(120));
  ctx->connectFullMesh(store, device);
  if (rank == 0) {
    char library[160];
    std::snprintf(library, sizeof library, "gloo %d.%d.%d, transport tcp 127.0.0.1, FileStore rendezvous, bind=%d",
                  GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, int(args.bind));
    peers::printHeader(library, args.nranks, kNameWidth);
  }
  Rank self(args, rank, ctx);
  int failures = 0;
  for (const auto& algo : args.algos) failures += self.sweep(algo);
  self.barrier();
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) usage();
    std::string key = argv[i], value = argv[i + 1];
    if (key == "-p") {
      if ((args.nranks = std::atoi(value.c_str())) < 1) usage();
    } else if (key == "-B") {
      args.bind = std::atoi(value.c_str()) != 0;
    } else if (key == "-a") {
      args.algos = peers::splitList(value);
      for (const auto& a : args.algos)
        if (std::find(std::begin(kAlgos), std::end(kAlgos), a) == std::end(kAlgos)) usage();
    } else if (!args.sweep.take(key, value)) {
      usage();
    }
  }
  args.sweep.finish();

  char dir[] = "/tmp/gloo_bench.XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("gloo_bench: mkdtemp");
    return 1;
  }
  std::fflush(stdout);  // nothing buffered may be printed twice by the children
  std::vector<pid_t> children;
  for (int r = 0; r < args.nranks; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("gloo_bench: fork");
      return 1;
    }
    if (pid == 0) {
      int rc = 1;
      try {
        rc = runRank(args, r, dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo_bench: rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    children.push_back(pid);
  }
  int rc = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return rc;
}
