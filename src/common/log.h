// Logging: COLLCOMM_DEBUG=VERSION|WARN|INFO|TRACE (each level prints the version banner once, at
// the first log check of the process), COLLCOMM_DEBUG_SUBSYS (comma list, ^ to exclude),
// COLLCOMM_DEBUG_FILE (%h host, %p pid). Setup/control tier only; the data path never logs.
#pragma once

#include <atomic>
#include <cstdint>

namespace collcomm::detail {

enum class LogLevel : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

enum LogSubsys : uint32_t {
  kSubsysInit = 1u << 0,
  kSubsysColl = 1u << 1,
  kSubsysP2p = 1u << 2,
  kSubsysShm = 1u << 3,
  kSubsysNet = 1u << 4,
  kSubsysBootstrap = 1u << 5,
  kSubsysGraph = 1u << 6,
  kSubsysTuning = 1u << 7,
  kSubsysEnv = 1u << 8,
  kSubsysAlloc = 1u << 9,
  kSubsysProxy = 1u << 10,
  kSubsysPlan = 1u << 11,  // each distinct plan of a communicator, once (plan/plan_log.h)
  kSubsysAll = ~0u,
};

// The configured level once the configuration has been read, -1 before: lets every CC_LOG below
// the level cost one load on the calls' paths, which log at INFO.
extern std::atomic<int> gLogLevel;
bool logEnabledSlow(LogLevel level, uint32_t subsys);
inline bool logEnabled(LogLevel level, uint32_t subsys) {
  const int configured = gLogLevel.load(std::memory_order_relaxed);
  if (configured >= 0 && static_cast<int>(level) > configured) return false;
  return logEnabledSlow(level, subsys);
}
void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
// One line on stderr whatever COLLCOMM_DEBUG says (same format, no file:line), for what the user
// must not miss: a setting that is not accepted. Reads no log configuration, so the configuration's
// own reading may use it.
void logAlways(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace collcomm::detail

#define CC_LOG(level, subsys, ...)                                                        \
  do {                                                                                    \
    if (::collcomm::detail::logEnabled((level), (subsys)))                                \
      ::collcomm::detail::logMessage((level), (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define CC_WARN(...) CC_LOG(::collcomm::detail::LogLevel::kWarn, ::collcomm::detail::kSubsysAll, __VA_ARGS__)
#define CC_INFO(subsys, ...) CC_LOG(::collcomm::detail::LogLevel::kInfo, (subsys), __VA_ARGS__)
#define CC_TRACE(subsys, ...) CC_LOG(::collcomm::detail::LogLevel::kTrace, (subsys), __VA_ARGS__)
