// Thread-local record of the last error sentence.
#include "common/status.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace collcomm::detail {
namespace {
thread_local std::string tLastError;
}

Status recordError(Status code, const char* file, int line, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  tLastError = buf;
  if (logEnabled(LogLevel::kWarn, kSubsysAll)) logMessage(LogLevel::kWarn, kSubsysAll, file, line, "%s", buf);
  return code;
}

const std::string& threadLastError() { return tLastError; }
void clearThreadLastError() { tLastError.clear(); }
void setThreadLastError(const std::string& message) { tLastError = message; }

}  // namespace collcomm::detail
