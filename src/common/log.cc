// Log configuration (read once per process) and the line format:
//   host:pid:tid CC LEVEL file:line message
#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/params.h"

namespace collcomm::detail {

std::atomic<int> gLogLevel{-1};

namespace {

struct LogConfig {
  LogLevel level = LogLevel::kNone;
  uint32_t subsys = kSubsysInit | kSubsysEnv;
  FILE* out = stderr;
  char host[64] = {};
};

uint32_t subsysBit(const std::string& name) {
  static const struct {
    const char* name;
    uint32_t bit;
  } kNames[] = {{"INIT", kSubsysInit},   {"COLL", kSubsysColl},   {"P2P", kSubsysP2p},
                {"SHM", kSubsysShm},     {"NET", kSubsysNet},     {"BOOTSTRAP", kSubsysBootstrap},
                {"GRAPH", kSubsysGraph}, {"TUNING", kSubsysTuning}, {"ENV", kSubsysEnv},
                {"ALLOC", kSubsysAlloc}, {"PROXY", kSubsysProxy}, {"ALL", kSubsysAll}};
  for (const auto& n : kNames)
    if (strcasecmp(n.name, name.c_str()) == 0) return n.bit;
  return 0;
}

std::string expandFileName(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') out += host;
      else if (c == 'p') out += std::to_string(getpid());
      else if (c == '%') out += '%';
      else { out += '%'; out += c; }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

LogConfig& config() {
  static LogConfig cfg;
  static std::once_flag once;
  std::call_once(once, [] {
    gethostname(cfg.host, sizeof(cfg.host) - 1);
    std::string level = paramStr(Param::kDebug);
    if (strcasecmp(level.c_str(), "VERSION") == 0) cfg.level = LogLevel::kVersion;
    else if (strcasecmp(level.c_str(), "WARN") == 0) cfg.level = LogLevel::kWarn;
    else if (strcasecmp(level.c_str(), "INFO") == 0) cfg.level = LogLevel::kInfo;
    else if (strcasecmp(level.c_str(), "TRACE") == 0) cfg.level = LogLevel::kTrace;
    std::string subsys = paramStr(Param::kDebugSubsys);
    bool exclude = !subsys.empty() && subsys[0] == '^';
    uint32_t mask = 0;
    size_t pos = exclude ? 1 : 0;
    while (pos <= subsys.size()) {
      size_t comma = subsys.find(',', pos);
      if (comma == std::string::npos) comma = subsys.size();
      mask |= subsysBit(subsys.substr(pos, comma - pos));
      pos = comma + 1;
    }
    cfg.subsys = exclude ? ~mask : mask;
    std::string file = paramStr(Param::kDebugFile);
    if (!file.empty()) {
      FILE* f = fopen(expandFileName(file, cfg.host).c_str(), "w");
      if (f != nullptr) {
        setvbuf(f, nullptr, _IOLBF, 0);
        cfg.out = f;
      }
    }
    gLogLevel.store(static_cast<int>(cfg.level), std::memory_order_release);
  });
  return cfg;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kVersion: return "VERSION";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

bool logEnabledSlow(LogLevel level, uint32_t subsys) {
  const LogConfig& cfg = config();
  if (static_cast<int>(level) > static_cast<int>(cfg.level)) return false;
  // Warnings always pass the subsystem filter.
  return level <= LogLevel::kWarn || (cfg.subsys & subsys) != 0;
}

void logMessage(LogLevel level, uint32_t subsys, const char* file, int line, const char* fmt, ...) {
  (void)subsys;
  const LogConfig& cfg = config();
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char* base = strrchr(file, '/');
  base = base != nullptr ? base + 1 : file;
  char lineBuf[1500];
  int n = snprintf(lineBuf, sizeof(lineBuf), "%s:%d:%ld CC %s %s:%d %s\n", cfg.host, getpid(),
                   static_cast<long>(syscall(SYS_gettid)), levelName(level), base, line, msg);
  if (n > 0) fwrite(lineBuf, 1, std::min<size_t>(n, sizeof(lineBuf) - 1), cfg.out);
}

}  // namespace collcomm::detail
