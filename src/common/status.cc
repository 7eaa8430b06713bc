// Thread-local record of the last error sentence.
#include "common/status.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace collcomm::detail {
namespace {
thread_local std::string tLastError;
// Whether tLastError holds a sentence, so that the clear on every API call reads one word
// (initial-exec: a plain %fs-relative load, no lazy construction) and not the string.
[[gnu::tls_model("initial-exec")]] constinit thread_local bool tHasError = false;
}

Status recordError(Status code, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  tLastError = buf;
  tHasError = true;
  if (logEnabled(LogLevel::kWarn, kSubsysAll)) logMessage(LogLevel::kWarn, kSubsysAll, file, line, "%s", buf);
  return code;
}

const std::string& threadLastError() { return tLastError; }
void clearThreadLastError() {
  if (!tHasError) return;
  tLastError.clear();
  tHasError = false;
}
void setThreadLastError(const std::string& message) {
  tLastError = message;
  tHasError = !message.empty();
}

}  // namespace collcomm::detail
