// A point in time by which a wait must end. Setup/control tier (reads the clock).
#pragma once

#include <chrono>
#include <cstdint>

namespace collcomm::detail {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  // timeoutSeconds <= 0 means "never" (only for tests that want it explicitly).
  static Deadline afterSeconds(double timeoutSeconds) {
    Deadline d;
    if (timeoutSeconds > 0)
      d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSeconds));
    else
      d.at_ = Clock::time_point::max();
    return d;
  }
  static Deadline never() { return afterSeconds(0); }
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, INT32_MAX]; for poll().
  int remainingMs() const {
    if (at_ == Clock::time_point::max()) return INT32_MAX;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    return left <= 0 ? 0 : (left > INT32_MAX ? INT32_MAX : static_cast<int>(left));
  }
  Clock::time_point at() const { return at_; }

 private:
  Clock::time_point at_ = Clock::time_point::max();
};

}  // namespace collcomm::detail
