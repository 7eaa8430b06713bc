// The communicator's worker thread: a FIFO of jobs, run one at a time.
#include "core/comm_worker.h"

#include <utility>

namespace collcomm::detail {

CommWorker::CommWorker() : thread_(loop, state_) {}

CommWorker::~CommWorker() {
  stop();
  if (thread_.joinable()) thread_.join();
}

uint64_t CommWorker::submit(Job job, JobOutcome* out) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->queue.push_back(Entry{std::move(job), out});
  const uint64_t ticket = state_->submitted.fetch_add(1, std::memory_order_release) + 1;
  state_->wake.notify_one();
  return ticket;
}

void CommWorker::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->finished.wait(lock, [&] { return state_->done.load(std::memory_order_relaxed) >= ticket; });
}

bool CommWorker::waitAll(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(state_->mu);
  const uint64_t ticket = state_->submitted.load(std::memory_order_relaxed);
  return state_->finished.wait_for(lock, limit, [&] { return state_->done.load(std::memory_order_relaxed) >= ticket; });
}

void CommWorker::stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopping = true;
  for (Entry& e : state_->queue) {
    if (e.out != nullptr) *e.out = {Status::kRemoteError, "the communicator was aborted before this work started"};
    state_->done.fetch_add(1, std::memory_order_release);
  }
  state_->queue.clear();
  state_->wake.notify_one();
  state_->finished.notify_all();
}

bool CommWorker::handOff(std::function<void()> reap) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!state_->running) return false;
  state_->reap = std::move(reap);
  thread_.detach();
  return true;
}

void CommWorker::loop(std::shared_ptr<State> state) {
  std::unique_lock<std::mutex> lock(state->mu);
  for (;;) {
    state->wake.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
    if (state->queue.empty()) return;  // stopping, nothing left
    Entry e = std::move(state->queue.front());
    state->queue.pop_front();
    state->running = true;
    lock.unlock();
    clearThreadLastError();
    JobOutcome outcome;
    outcome.status = e.job();
    if (!isOk(outcome.status)) outcome.message = threadLastError();
    e.job = nullptr;  // what the job captured goes before the job counts as done
    lock.lock();
    state->running = false;
    if (e.out != nullptr) *e.out = std::move(outcome);
    state->done.fetch_add(1, std::memory_order_release);
    state->finished.notify_all();
    if (state->reap) {
      // The communicator was handed to this thread by ccCommAbort: free it and end.
      std::function<void()> reap = std::move(state->reap);
      lock.unlock();
      reap();
      return;
    }
  }
}

}  // namespace collcomm::detail
