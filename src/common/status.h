// Internal status type, the check macro, and the one place an error's sentence is recorded.
//
// The function that decides an error calls CC_ERROR(code, fmt, ...): it writes the sentence the
// user will read (what failed, which peer/host, what to try), logs it once at WARN, and records it
// for ccGetLastError. Callers only propagate with CC_CHECK.
#pragma once

#include <string>

#include "collcomm.h"

namespace collcomm::detail {

enum class [[nodiscard]] Status : int {
  kSuccess = ccSuccess,
  kCudaError = ccUnhandledCudaError,
  kSystemError = ccSystemError,
  kInternalError = ccInternalError,
  kInvalidArgument = ccInvalidArgument,
  kInvalidUsage = ccInvalidUsage,
  kRemoteError = ccRemoteError,
  kInProgress = ccInProgress,
  kTimeout = ccTimeout,
};

inline constexpr Status kOk = Status::kSuccess;
inline ccResult_t toResult(Status s) { return static_cast<ccResult_t>(s); }
inline bool isOk(Status s) { return s == Status::kSuccess; }

// Records `message` as this thread's last error, logs it at WARN, and returns `code`.
Status recordError(Status code, const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 4, 5)));

// The last sentence recorded on this thread ("" if none).
const std::string& threadLastError();
void clearThreadLastError();
// Records a sentence decided elsewhere (another thread) as this thread's, without logging again.
void setThreadLastError(const std::string& message);

}  // namespace collcomm::detail

#define CC_ERROR(code, ...) ::collcomm::detail::recordError((code), __FILE__, __LINE__, __VA_ARGS__)

#define CC_CHECK(expr)                                     \
  do {                                                     \
    ::collcomm::detail::Status ccCheckStatus_ = (expr);    \
    if (ccCheckStatus_ != ::collcomm::detail::kOk) return ccCheckStatus_; \
  } while (0)
