// A test that cannot hang: Watchdog ends the whole test process with a message if the scope it
// guards has not finished in time. Every multi-rank test holds one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace collcomm::test {

class Watchdog {
 public:
  Watchdog(int seconds, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        fprintf(stderr, "WATCHDOG: '%s' did not finish within %d s; ending the test process\n", what_.c_str(), seconds);
        fflush(stderr);
        _exit(124);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Runs body() under a Watchdog named after the current test.
inline void runWithWatchdog(int seconds, const std::function<void()>& body) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  Watchdog dog(seconds, t != nullptr ? std::string(t->test_suite_name()) + "." + t->name() : "test");
  body();
}

}  // namespace collcomm::test
