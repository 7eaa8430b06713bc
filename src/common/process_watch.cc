// Watching other processes of this machine for their exit (see process_watch.h).
#include "common/process_watch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace collcomm::detail {

bool processAlive(int pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // Format: pid (comm) state ...; comm may hold spaces or parentheses, so find the last ')'.
  const char* paren = strrchr(buf, ')');
  if (paren == nullptr || paren[1] == '\0' || paren[2] == '\0') return false;
  const char state = paren[2];
  return state != 'Z' && state != 'X' && state != 'x';
}

ProcessWatch::ProcessWatch(std::vector<Watched> watched, std::chrono::milliseconds period,
                           std::function<void(int rank)> onExit)
    : watched_(std::move(watched)), period_(period), onExit_(std::move(onExit)) {
  thread_ = std::thread([this] { run(); });
}

ProcessWatch::~ProcessWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ProcessWatch::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ && !watched_.empty()) {
    for (size_t i = 0; i < watched_.size();) {
      if (processAlive(watched_[i].pid)) {
        ++i;
        continue;
      }
      const int rank = watched_[i].rank;
      watched_.erase(watched_.begin() + static_cast<std::ptrdiff_t>(i));
      lock.unlock();
      onExit_(rank);
      lock.lock();
    }
    wake_.wait_for(lock, period_, [this] { return stopping_; });
  }
}

}  // namespace collcomm::detail
