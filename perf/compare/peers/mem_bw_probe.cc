// mem_bw_probe.cc - this machine's memory bandwidth (the ceiling of any host-memory collective at
// large sizes) and the one-way latency of a cache line handed between two cores (the floor of a
// small shared-memory hand-off).
//
// Kernels over float32 arrays of SIZE bytes each; bytes are counted as STREAM counts them (the
// write-allocate read of a plain store is not counted, so `add` moves about 4 x SIZE but is
// credited 3 x SIZE):
//   memcpy  memcpy(c, a)                      2 x SIZE
//   add     c[i] = a[i] + b[i]                3 x SIZE
//   add_nt  the same with streaming stores    3 x SIZE (x86 with AVX; a plain loop elsewhere)
//   read    sum of a[i]                       1 x SIZE
// With T threads the arrays are cut into T contiguous slices, thread t pinned to CPU t % ncpu; the
// rate is the bytes over the wall time of the slowest slice. Each kernel runs REPS times; the best
// and the median rate are printed, one row per kernel (summarize.py reads the rows).
//
// Build: g++ -O3 -march=native -std=c++20 -pthread -o mem_bw_probe mem_bw_probe.cc
// Run:   ./mem_bw_probe [-s 256K,4M,256M] [-T 1,2] [-r reps]
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Kernel = std::function<void(size_t begin, size_t end)>;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int cpuCount() { return std::max(1, int(std::thread::hardware_concurrency())); }

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % cpuCount(), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end == 'k' || *end == 'K') v *= 1024;
  if (*end == 'm' || *end == 'M') v *= 1024.0 * 1024;
  if (*end == 'g' || *end == 'G') v *= 1024.0 * 1024 * 1024;
  return size_t(v);
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos <= s.size();) {
    size_t comma = std::min(s.find(',', pos), s.size());
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

void add(float* __restrict c, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}

void addStreaming(float* c, const float* a, const float* b, size_t n) {
  size_t i = 0;
#if defined(__AVX__)
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
  _mm_sfence();
#endif
  for (; i < n; i++) c[i] = a[i] + b[i];
}

std::atomic<float> gSink;  // keeps the read kernel's sum alive

void readAll(const float* a, size_t n) {
  float lanes[16] = {};  // independent accumulators, so the loop is bound by loads, not by one add chain
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++) lanes[l] += a[i + l];
  float s = 0;
  for (float v : lanes) s += v;
  for (; i < n; i++) s += a[i];
  gSink.store(s, std::memory_order_relaxed);
}

struct Rates {
  double best = 0, median = 0;
};

// Runs KERNEL over [0, n) cut into `threads` slices, `reps` times; rates in GB/s for `bytes` per run.
Rates measure(int threads, size_t n, int reps, double bytes, const Kernel& kernel) {
  std::vector<double> seconds(reps);
  std::vector<std::vector<double>> sliceTime(threads, std::vector<double>(reps));
  std::barrier sync(threads);
  auto worker = [&](int t) {
    pinTo(t);
    size_t begin = n * t / threads, end = n * (t + 1) / threads;
    begin &= ~size_t(15);  // slices start 64-byte aligned for the streaming stores
    if (t + 1 < threads) end &= ~size_t(15);
    for (int r = 0; r < reps; r++) {
      sync.arrive_and_wait();
      double t0 = now();
      kernel(begin, end);
      sliceTime[t][r] = now() - t0;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  for (int r = 0; r < reps; r++)
    for (int t = 0; t < threads; t++) seconds[r] = std::max(seconds[r], sliceTime[t][r]);
  std::sort(seconds.begin(), seconds.end());
  return {bytes / seconds.front() / 1e9, bytes / seconds[reps / 2] / 1e9};
}

float* arrayOf(size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) & ~size_t(4095));
  if (!p) {
    std::fprintf(stderr, "mem_bw_probe: cannot allocate %zu bytes\n", bytes);
    std::exit(1);
  }
  return static_cast<float*>(p);
}

// One-way time of a cache line handed back and forth between two pinned threads, in ns.
double handOffNs(int cpuA, int cpuB, int rounds) {
  alignas(64) std::atomic<int> turn{0};
  std::thread peer([&] {
    pinTo(cpuB);
    for (int i = 0; i < rounds; i++) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) relax();
      turn.store(2 * i + 2, std::memory_order_release);
    }
  });
  pinTo(cpuA);
  double t0 = now();
  for (int i = 0; i < rounds; i++) {
    turn.store(2 * i + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * i + 2) relax();
  }
  double dt = now() - t0;
  peer.join();
  return dt / (2.0 * rounds) * 1e9;
}

void row(const char* kernel, size_t size, int threads, int reps, Rates r) {
  std::printf("  %-8s %10zu %8d %5d %10.2f %10.2f\n", kernel, size, threads, reps, r.best, r.median);
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizesArg = "256K,4M,256M", threadsArg = "1,2";
  int reps = 0;  // 0: enough for ~0.3 s per kernel at ~10 GB/s, 10 to 2000
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 < argc && key == "-s")
      sizesArg = argv[i + 1];
    else if (i + 1 < argc && key == "-T")
      threadsArg = argv[i + 1];
    else if (i + 1 < argc && key == "-r")
      reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: mem_bw_probe [-s size,...] [-T threads,...] [-r reps]\n");
      return 2;
    }
  }
  std::printf("# mem_bw_probe: ncpu=%d; GB/s = 1e9 B/s, STREAM byte counting; buffer size is per array\n", cpuCount());
  std::printf("# %-8s %10s %8s %5s %10s %10s\n", "kernel", "size_B", "threads", "reps", "best_GBs", "median_GBs");
  for (const auto& sizeText : splitList(sizesArg)) {
    size_t size = parseSize(sizeText) & ~size_t(63);
    if (size == 0) continue;
    size_t n = size / sizeof(float);
    float *a = arrayOf(size), *b = arrayOf(size), *c = arrayOf(size);
    for (size_t i = 0; i < n; i++) a[i] = float(i % 7), b[i] = float(i % 5), c[i] = 0;
    int r = reps > 0 ? reps : int(std::clamp<size_t>((size_t(3) << 30) / (3 * size), 10, 2000));
    for (const auto& threadText : splitList(threadsArg)) {
      int threads = std::max(1, std::atoi(threadText.c_str()));
      row("memcpy", size, threads, r,
          measure(threads, n, r, 2.0 * size, [&](size_t s, size_t e) { std::memcpy(c + s, a + s, (e - s) * 4); }));
      row("add", size, threads, r,
          measure(threads, n, r, 3.0 * size, [&](size_t s, size_t e) { add(c + s, a + s, b + s, e - s); }));
      for (size_t i = 0; i < n; i += 4099)
        if (c[i] != float(i % 7 + i % 5)) {
          std::printf("add kernel verification FAILED at %zu\n", i);
          return 1;
        }
      row("add_nt", size, threads, r,
          measure(threads, n, r, 3.0 * size, [&](size_t s, size_t e) { addStreaming(c + s, a + s, b + s, e - s); }));
      row("read", size, threads, r,
          measure(threads, n, r, 1.0 * size, [&](size_t s, size_t e) { readAll(a + s, e - s); }));
      std::fflush(stdout);
    }
    std::free(a), std::free(b), std::free(c);
  }
  if (cpuCount() >= 2) {
    std::vector<double> ns;
    for (int i = 0; i < 5; i++) ns.push_back(handOffNs(0, 1, 200000));
    std::sort(ns.begin(), ns.end());
    std::printf("# cross-core cache-line ping-pong (cpu0<->cpu1), one-way latency: best %.1f ns, median %.1f ns\n",
                ns.front(), ns[2]);
  }
  return 0;
}
