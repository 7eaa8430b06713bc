// stderr through a pipe: a reader thread forwards lines to the real stderr and keeps what the
// TUNING lines say. The perf binaries are user programs, so they read COLLCOMM_DEBUG themselves
// (the library's own reads stay in src/common/params).
#include "common/plan_capture.h"

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace collcomm::perf {
namespace {

constexpr char kSyncTag[] =
    "\x01"
    "cc-perf-sync ";

struct Capture {
  bool active = false;
  bool hideTuning = false;  // we turned TUNING on, so its per-call lines are ours to condense
  int savedStderr = -1;
  int pipeWrite = -1;
  int pipeRead = -1;
  std::thread reader;
  std::mutex mu;
  std::condition_variable cv;
  unsigned long syncSent = 0;
  unsigned long syncSeen = 0;
  struct Seen {
    int rank;
    PlanInfo plan;
  };
  std::vector<Seen> seen;
};

Capture& cap() {
  static Capture c;
  return c;
}

void writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// "host:pid:tid CC INFO enqueue.cc:137 AllReduce rank 0: 1024 bytes, float, algorithm Ring, ..."
bool parseTuning(const std::string& line, int* rank, PlanInfo* plan) {
  const size_t at = line.find(" CC INFO ");
  if (at == std::string::npos) return false;
  const char* msg = strchr(line.c_str() + at + 9, ' ');  // skip "file:line"
  if (msg == nullptr) return false;
  char coll[64], type[32], algo[32], proto[32];
  size_t bytes = 0;
  int channels = 0;
  if (sscanf(msg, " %63s rank %d: %zu bytes, %31[^,], algorithm %31[^,], protocol %31[^,], %d channel", coll, rank,
             &bytes, type, algo, proto, &channels) != 7)
    return false;
  plan->algorithm = algo;
  plan->protocol = proto;
  plan->channels = channels;
  return true;
}

void handleLine(Capture& c, const std::string& line) {
  if (line.compare(0, sizeof(kSyncTag) - 1, kSyncTag) == 0) {
    std::lock_guard<std::mutex> lock(c.mu);
    c.syncSeen = strtoul(line.c_str() + sizeof(kSyncTag) - 1, nullptr, 10);
    c.cv.notify_all();
    return;
  }
  int rank;
  PlanInfo plan;
  if (parseTuning(line, &rank, &plan)) {
    {
      std::lock_guard<std::mutex> lock(c.mu);
      bool known = false;
      for (const Capture::Seen& s : c.seen) known = known || (s.rank == rank && s.plan == plan);
      if (!known) c.seen.push_back({rank, plan});
    }
    if (c.hideTuning) return;
  }
  writeAll(c.savedStderr, line.data(), line.size());
}

void readLoop(Capture& c) {
  std::string pending;
  char buf[4096];
  for (;;) {
    ssize_t n = read(c.pipeRead, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      handleLine(c, pending.substr(start, nl - start + 1));
      start = nl + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) writeAll(c.savedStderr, pending.data(), pending.size());
  std::lock_guard<std::mutex> lock(c.mu);
  c.syncSeen = ~0ul;  // nothing more will come: release any waiter
  c.cv.notify_all();
}

// Makes sure COLLCOMM_DEBUG_SUBSYS includes TUNING; returns true if we had to add it.
bool enableTuning() {
  const char* cur = getenv("COLLCOMM_DEBUG_SUBSYS");
  if (cur == nullptr || *cur == '\0') {
    setenv("COLLCOMM_DEBUG_SUBSYS", "INIT,ENV,TUNING", 1);
    return true;
  }
  std::string s = cur;
  if (s[0] == '^') return false;  // an exclusion list: TUNING is on unless the user excluded it
  std::string upper;
  for (char ch : s) upper += static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if (upper.find("TUNING") != std::string::npos || upper.find("ALL") != std::string::npos) return false;
  setenv("COLLCOMM_DEBUG_SUBSYS", (s + ",TUNING").c_str(), 1);
  return true;
}

}  // namespace

void PlanCapture::install() {
  Capture& c = cap();
  if (c.active) return;
  const char* level = getenv("COLLCOMM_DEBUG");
  if (level == nullptr || (strcasecmp(level, "INFO") != 0 && strcasecmp(level, "TRACE") != 0)) return;
  const char* file = getenv("COLLCOMM_DEBUG_FILE");
  if (file != nullptr && *file != '\0') return;  // the log goes to a file: nothing to read here
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  c.savedStderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
  if (c.savedStderr < 0 || dup2(fds[1], 2) < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  c.pipeRead = fds[0];
  c.pipeWrite = fds[1];
  c.hideTuning = enableTuning();
  c.active = true;
  c.reader = std::thread(readLoop, std::ref(c));
}

bool PlanCapture::active() { return cap().active; }

std::vector<PlanInfo> PlanCapture::collect(int rank) {
  Capture& c = cap();
  std::vector<PlanInfo> out;
  if (!c.active) return out;
  fflush(stderr);
  unsigned long n;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    n = ++c.syncSent;
  }
  char tag[64];
  int len = snprintf(tag, sizeof(tag), "%s%lu\n", kSyncTag, n);
  writeAll(2, tag, static_cast<size_t>(len));
  std::unique_lock<std::mutex> lock(c.mu);
  c.cv.wait_for(lock, std::chrono::seconds(10), [&] { return c.syncSeen >= n; });
  for (const Capture::Seen& s : c.seen)
    if (s.rank == rank) out.push_back(s.plan);
  c.seen.clear();
  return out;
}

void PlanCapture::uninstall() {
  Capture& c = cap();
  if (!c.active) return;
  c.active = false;
  fflush(stderr);
  dup2(c.savedStderr, 2);
  close(c.pipeWrite);
  if (c.reader.joinable()) c.reader.join();
  close(c.pipeRead);
}

}  // namespace collcomm::perf
