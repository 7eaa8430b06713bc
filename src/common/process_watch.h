// Watching other processes of this machine for their exit: how a rank learns that a peer process
// died where nothing else would tell it before its deadline (GPU ranks wait in kernels, which
// cannot look at /proc; the CUDA executor runs one of these for peers in other processes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace collcomm::detail {

// True when process `pid` on this machine has not exited (a zombie counts as exited).
bool processAlive(int pid);

// How often a rank waiting on a peer process looks at it: a dead peer is named within this, for
// the cost of reading one /proc entry per peer this often.
constexpr std::chrono::milliseconds kProcessCheckPeriod{50};

class ProcessWatch {
 public:
  struct Watched {
    int rank;
    int pid;
  };
  // Looks at every watched process each `period` on a thread of its own, and calls onExit on that
  // thread with the rank of each one found gone, once per process; stops when none is left.
  ProcessWatch(std::vector<Watched> watched, std::chrono::milliseconds period, std::function<void(int rank)> onExit);
  // Stops the thread (within a period at most; at once while it waits).
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

 private:
  void run();

  std::vector<Watched> watched_;
  std::chrono::milliseconds period_;
  std::function<void(int)> onExit_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace collcomm::detail
