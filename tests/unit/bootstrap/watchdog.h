// Test watchdog: runs a test body on its own thread and ends the process with a failure if the
// body has not returned in time, so a hung multi-rank test can never hang CI.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

namespace collcomm::testing {

// Runs body(); if it has not returned within `seconds`, prints which test hung and calls _exit(1).
inline void runWithWatchdog(double seconds, const std::function<void()>& body) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread worker([&] {
    body();
    std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(m);
  if (!cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done; })) {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    fprintf(stderr, "WATCHDOG: %s.%s did not finish within %.1f s; exiting\n", t ? t->test_suite_name() : "?",
            t ? t->name() : "?", seconds);
    fflush(stderr);
    _exit(1);
  }
  lock.unlock();
  worker.join();
}

}  // namespace collcomm::testing
