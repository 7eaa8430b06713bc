// wake_latency_probe.cc - what a wait costs on this machine: two processes pinned to CPU 0 and
// CPU 1 pass an 8-byte token back and forth; one-way latency = elapsed / (2 x rounds), after 100
// untimed rounds. Sleeping waits (pipe_block, tcp_block, shm_futex) against spinning ones
// (pipe_spin, tcp_spin: non-blocking calls retried; shm_spin: a flag in shared memory, no
// syscalls - the floor). Why collcomm's host waits spin before they yield (docs/architecture.md).
//
// Build: g++ -O2 -std=c++20 -o wake_latency_probe wake_latency_probe.cc
// Run:   ./wake_latency_probe [reps]   (default 5; prints best and median over reps)
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

constexpr int kUntimed = 100;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

[[noreturn]] void fail(const char* what) {
  std::perror(what);
  _exit(1);
}

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), &set);
  sched_setaffinity(0, sizeof set, &set);
}

// One side of the exchange: `pass(i)` hands token i to the other side, `await(i)` waits for it.
struct Side {
  std::function<void(int)> pass;
  std::function<void(int)> await;
};

// Forks the echoing child onto CPU 1, times `rounds` round trips from CPU 0; ns one way.
double pingPong(const Side& parent, const Side& child, int rounds) {
  const int total = rounds + kUntimed;
  pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    pinTo(1);
    for (int i = 0; i < total; i++) {
      child.await(2 * i + 1);
      child.pass(2 * i + 2);
    }
    _exit(0);
  }
  pinTo(0);
  double start = 0;
  for (int i = 0; i < total; i++) {
    if (i == kUntimed) start = now();
    parent.pass(2 * i + 1);
    parent.await(2 * i + 2);
  }
  double elapsed = now() - start;
  waitpid(pid, nullptr, 0);
  return elapsed / (2.0 * rounds) * 1e9;
}

// 8 bytes, whole, retrying EAGAIN (the spinning variants) and EINTR.
void writeToken(int fd, uint64_t v) {
  for (size_t done = 0; done < sizeof v;) {
    ssize_t k = write(fd, reinterpret_cast<char*>(&v) + done, sizeof v - done);
    if (k < 0 && errno != EAGAIN && errno != EINTR) fail("write");
    if (k > 0) done += size_t(k);
  }
}
void readToken(int fd) {
  uint64_t v;
  for (size_t done = 0; done < sizeof v;) {
    ssize_t k = read(fd, reinterpret_cast<char*>(&v) + done, sizeof v - done);
    if (k == 0) fail("read: end of stream");
    if (k < 0 && errno != EAGAIN && errno != EINTR) fail("read");
    if (k > 0) done += size_t(k);
  }
}

// PARENT_IN/PARENT_OUT are what the parent reads/writes; the child uses the other ends.
double overDescriptors(int parentIn, int parentOut, int childIn, int childOut, bool spin, int rounds) {
  if (spin)
    for (int fd : {parentIn, childIn}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  Side parent{[=](int i) { writeToken(parentOut, uint64_t(i)); }, [=](int) { readToken(parentIn); }};
  Side child{[=](int i) { writeToken(childOut, uint64_t(i)); }, [=](int) { readToken(childIn); }};
  return pingPong(parent, child, rounds);
}

double overPipes(bool spin, int rounds) {
  int toChild[2], toParent[2];
  if (pipe(toChild) || pipe(toParent)) fail("pipe");
  double ns = overDescriptors(toParent[0], toChild[1], toChild[0], toParent[1], spin, rounds);
  for (int fd : {toChild[0], toChild[1], toParent[0], toParent[1]}) close(fd);
  return ns;
}

double overLoopbackTcp(bool spin, int rounds) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) || listen(listener, 1) ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len))
    fail("listen");
  int a = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof addr)) fail("connect");
  int b = accept(listener, nullptr, nullptr);
  if (b < 0) fail("accept");
  int one = 1;
  for (int fd : {a, b}) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  double ns = overDescriptors(a, a, b, b, spin, rounds);
  for (int fd : {a, b, listener}) close(fd);
  return ns;
}

double overSharedFlag(bool sleep, int rounds) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) fail("mmap");
  auto* flag = new (page) std::atomic<int>(0);
  auto futex = [flag](int op, int value) {
    syscall(SYS_futex, reinterpret_cast<int*>(flag), op, value, nullptr, nullptr, 0);
  };
  Side side{[=](int i) {
              flag->store(i, std::memory_order_release);
              if (sleep) futex(FUTEX_WAKE, 1);
            },
            [=](int i) {
              for (int seen; (seen = flag->load(std::memory_order_acquire)) != i;) {
                if (sleep)
                  futex(FUTEX_WAIT, seen);
#if defined(__x86_64__) || defined(__i386__)
                else
                  __builtin_ia32_pause();
#endif
              }
            }};
  double ns = pingPong(side, side, rounds);
  munmap(page, 4096);
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (reps < 1) {
    std::fprintf(stderr, "usage: wake_latency_probe [reps >= 1]\n");
    return 2;
  }
  struct Probe {
    const char* name;
    int rounds;
    std::function<double(int)> run;
  };
  const Probe probes[] = {
      {"shm_spin", 200000, [](int n) { return overSharedFlag(false, n); }},
      {"shm_futex", 5000, [](int n) { return overSharedFlag(true, n); }},
      {"pipe_spin", 50000, [](int n) { return overPipes(true, n); }},
      {"pipe_block", 5000, [](int n) { return overPipes(false, n); }},
      {"tcp_spin", 20000, [](int n) { return overLoopbackTcp(true, n); }},
      {"tcp_block", 5000, [](int n) { return overLoopbackTcp(false, n); }},
  };
  std::printf("# wake_latency_probe: 8-byte ping-pong cpu0<->cpu1, one-way latency in us (%d reps)\n", reps);
  std::printf("# %-12s %8s %10s %10s\n", "probe", "iters", "best_us", "median_us");
  for (const Probe& p : probes) {
    std::vector<double> ns;
    for (int r = 0; r < reps; r++) ns.push_back(p.run(p.rounds));
    std::sort(ns.begin(), ns.end());
    std::printf("  %-12s %8d %10.2f %10.2f\n", p.name, p.rounds, ns.front() / 1e3, ns[ns.size() / 2] / 1e3);
    std::fflush(stdout);
  }
  return 0;
}
