// A communicator's persistent worker (control tier): one thread that runs the communicator's work
// off its caller's thread, jobs one at a time in the order they were submitted. It is made the
// first time a communicator needs it (a non-blocking communicator's init and operations, this
// communicator's share of a ccGroupEnd that drives several communicators) and ends when the
// communicator is destroyed or aborted: no thread is created per ccGroupEnd or per operation.
// A blocking communicator's own calls never go through it (no thread hop on the data path).
//
// Threading: submit/wait/stop/handOff are called by the thread that owns the communicator (or
// ccCommAbort's); busy() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace collcomm::detail {

// What one job left behind: its status and, on failure, its sentence (a job's errors are recorded
// on the worker's thread, where the caller's ccGetLastError cannot see them).
struct JobOutcome {
  Status status = kOk;
  std::string message;
};

class CommWorker {
 public:
  using Job = std::function<Status()>;

  CommWorker();
  // Stops (queued jobs are dropped) and joins, unless the thread was handed the communicator.
  ~CommWorker();
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // Queues `job`; it has finished (and `out`, when not null, holds its outcome) once wait(ticket)
  // returns. Jobs dropped by stop() finish with Status::kRemoteError.
  uint64_t submit(Job job, JobOutcome* out);
  // Blocks until every job up to `ticket` has finished. Bounded by the jobs' own deadlines.
  void wait(uint64_t ticket);
  // Blocks until every submitted job has finished, or `limit` passes; true if they have.
  bool waitAll(std::chrono::milliseconds limit);
  // Blocks until every submitted job has finished. Bounded by the jobs' own deadlines.
  void drain() { wait(state_->submitted.load(std::memory_order_relaxed)); }
  // Whether submitted work has not finished yet. Acquire: once false, the jobs' effects are seen.
  bool busy() const {
    return state_->done.load(std::memory_order_acquire) != state_->submitted.load(std::memory_order_acquire);
  }
  // Drops the jobs that have not started; the thread ends after the running one.
  void stop();
  // For ccCommAbort when the running job did not return in time: the thread calls `reap` (which
  // frees the communicator, and this worker with it) once that job returns, and the caller
  // forgets the communicator. False if nothing is running any more: the caller frees it itself.
  bool handOff(std::function<void()> reap);

 private:
  struct Entry {
    Job job;
    JobOutcome* out;
  };
  // What the thread shares with this object; the thread keeps it alive past a handOff's reap.
  struct State {
    std::mutex mu;
    std::condition_variable wake;      // the thread: work or stop
    std::condition_variable finished;  // waiters: a job finished
    std::atomic<uint64_t> submitted{0};
    std::atomic<uint64_t> done{0};
    std::deque<Entry> queue;
    bool stopping = false;
    bool running = false;  // a job is running outside the lock
    std::function<void()> reap;
  };
  static void loop(std::shared_ptr<State> state);

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
};

}  // namespace collcomm::detail
