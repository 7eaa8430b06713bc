// Ranks as threads of the test process: makes n host communicators with ccCommInitAll and runs a
// body on one thread per rank. Failures inside bodies are collected as strings (gtest assertions
// are not thread-safe to abort from), and reported by the caller.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collcomm.h"

namespace collcomm::test {

class ThreadRanks {
 public:
  explicit ThreadRanks(int n) : comms_(n, nullptr) { result_ = ccCommInitAll(comms_.data(), n, nullptr); }
  ~ThreadRanks() {
    for (ccComm_t c : comms_)
      if (c != nullptr) ccCommDestroy(c);
  }
  ccResult_t initResult() const { return result_; }
  int size() const { return static_cast<int>(comms_.size()); }
  ccComm_t comm(int r) const { return comms_[r]; }
  void forget(int r) { comms_[r] = nullptr; }

  // Runs body(rank, comm) on one thread per rank and waits for all.
  void run(const std::function<void(int, ccComm_t)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size(); ++r) threads.emplace_back(body, r, comms_[r]);
    for (auto& t : threads) t.join();
  }

  void fail(const std::string& msg) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failures_.size() < 20) failures_.push_back(msg);
  }
  std::string failures() const {
    std::string out;
    for (const auto& f : failures_) out += f + "\n";
    return out;
  }
  bool ok() const { return failures_.empty(); }

 private:
  std::vector<ccComm_t> comms_;
  ccResult_t result_;
  std::mutex mu_;
  std::vector<std::string> failures_;
};

}  // namespace collcomm::test
