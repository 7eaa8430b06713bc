// phase_probe - how far apart this VM's first two CPUs are right now: two threads, one pinned to
// each, pass one cache line back and forth and the program prints the mean round trip:
//   phase_probe_rt_ns 104.2
// ~100 ns when the vCPUs share a cache, ~500 ns when the hypervisor has put them on different dies
// (docs/performance.md, "The development VM's two phases"). compare.sh runs it before and after every
// benchmark command. Usage: phase_probe [round trips, default 20000] (~2-10 ms).
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

alignas(128) std::atomic<long> ping{0};
alignas(128) std::atomic<long> pong{0};

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long trips = argc > 1 ? std::atol(argv[1]) : 20000;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (trips <= 0 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 2;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::printf("phase_probe_rt_ns n/a (one CPU)\n");
    return 0;
  }
  std::thread peer([&] {
    if (!pin(cpus[1])) std::exit(2);
    for (long i = 1; i <= trips; ++i) {
      while (ping.load(std::memory_order_acquire) != i) {
      }
      pong.store(i, std::memory_order_release);
    }
  });
  if (!pin(cpus[0])) return 2;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 1; i <= trips; ++i) {
    ping.store(i, std::memory_order_release);
    while (pong.load(std::memory_order_acquire) != i) {
    }
  }
  const auto end = std::chrono::steady_clock::now();
  peer.join();
  std::printf("phase_probe_rt_ns %.1f\n", std::chrono::duration<double, std::nano>(end - start).count() / trips);
  return 0;
}
