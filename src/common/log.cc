// Log configuration (read once per process) and the line format:
//   host:pid:tid CC LEVEL file:line message
#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/params.h"
#include "common/version_text.h"

namespace collcomm::detail {

std::atomic<int> gLogLevel{-1};

namespace {

struct LogConfig {
  LogLevel level = LogLevel::kNone;
  uint32_t subsys = kSubsysInit | kSubsysEnv;
  FILE* out = stderr;
  char host[64] = {};
};

struct NamedBit {
  const char* name;
  uint32_t bit;
};
constexpr NamedBit kSubsysNames[] = {
    {"INIT", kSubsysInit}, {"COLL", kSubsysColl},           {"P2P", kSubsysP2p},     {"SHM", kSubsysShm},
    {"NET", kSubsysNet},   {"BOOTSTRAP", kSubsysBootstrap}, {"GRAPH", kSubsysGraph}, {"TUNING", kSubsysTuning},
    {"ENV", kSubsysEnv},   {"ALLOC", kSubsysAlloc},         {"PROXY", kSubsysProxy}, {"PLAN", kSubsysPlan},
    {"ALL", kSubsysAll}};
constexpr struct {
  const char* name;
  LogLevel level;
} kLevelNames[] = {
    {"VERSION", LogLevel::kVersion}, {"WARN", LogLevel::kWarn}, {"INFO", LogLevel::kInfo}, {"TRACE", LogLevel::kTrace}};

// "A, B, C" of a table's names.
template <typename Table>
std::string nameList(const Table& table) {
  std::string out;
  for (const auto& n : table) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

LogLevel parseLevel(const std::string& text) {
  if (text.empty()) return LogLevel::kNone;
  for (const auto& n : kLevelNames)
    if (strcasecmp(n.name, text.c_str()) == 0) return n.level;
  warnBadParam(Param::kDebug, text, "is not a level (" + nameList(kLevelNames) + ")", "logging nothing");
  return LogLevel::kNone;
}

// "INIT,NET" or "^NET": the mask; unknown names warn and are left out, and a list with no known
// name at all gives the default.
uint32_t parseSubsys(const std::string& text) {
  const std::string fallback = paramInfo(Param::kDebugSubsys).defaultValue;
  const std::string list = text.empty() ? fallback : text;
  const bool exclude = list[0] == '^';
  uint32_t mask = 0;
  std::string unknown;
  bool anyKnown = false;
  for (size_t pos = exclude ? 1 : 0; pos <= list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = list.substr(pos, comma - pos);
    bool found = false;
    for (const NamedBit& n : kSubsysNames)
      if (strcasecmp(n.name, name.c_str()) == 0) {
        mask |= n.bit;
        found = true;
      }
    anyKnown |= found;
    if (!found && !name.empty()) unknown += (unknown.empty() ? "" : ",") + name;
    pos = comma + 1;
  }
  if (!unknown.empty()) {
    if (!anyKnown) {
      warnBadParam(Param::kDebugSubsys, text, "names no subsystem (" + nameList(kSubsysNames) + ")",
                   "using the default " + fallback);
      return parseSubsys(fallback);
    }
    warnBadParam(Param::kDebugSubsys, text,
                 "has unknown subsystems " + unknown + " (known: " + nameList(kSubsysNames) + ")", "leaving them out");
  }
  return exclude ? ~mask : mask;
}

// "collcomm version X.Y.Z (...)": NCCL's "NCCL version 2.x.y+cudaX.Y" line, with what this build has.
std::string versionBanner() {
  char text[96];
  ccVersionText(CC_VERSION_CODE, text, sizeof(text));
#ifdef CC_BUILD_CUDA_VERSION
  return std::string(text) + " (host executor; CUDA executor, kernels compiled with CUDA " CC_BUILD_CUDA_VERSION ")";
#else
  return std::string(text) + " (host executor; built without CUDA)";
#endif
}

// "host:pid:tid CC LEVEL [file:line ]message\n" into out, in one write.
void writeLine(FILE* out, const char* host, LogLevel level, const char* where, const char* msg);

std::string expandFileName(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h')
        out += host;
      else if (c == 'p')
        out += std::to_string(getpid());
      else if (c == '%')
        out += '%';
      else {
        out += '%';
        out += c;
      }
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
    cfg.level = parseLevel(paramStr(Param::kDebug));
    cfg.subsys = parseSubsys(paramStr(Param::kDebugSubsys));
    std::string file = paramStr(Param::kDebugFile);
    if (!file.empty()) {
      const std::string path = expandFileName(file, cfg.host);
      FILE* f = fopen(path.c_str(), "w");
      if (f != nullptr) {
        setvbuf(f, nullptr, _IOLBF, 0);
        cfg.out = f;
      } else {
        warnBadParam(Param::kDebugFile, file, "cannot be opened (" + path + ": " + strerror(errno) + ")",
                     "logging to stderr");
      }
    }
    if (cfg.level >= LogLevel::kVersion) writeLine(cfg.out, cfg.host, LogLevel::kVersion, "", versionBanner().c_str());
    gLogLevel.store(static_cast<int>(cfg.level), std::memory_order_release);
  });
  return cfg;
}

const char* levelName(LogLevel level) {
  for (const auto& n : kLevelNames)
    if (n.level == level) return n.name;
  return "";
}

}  // namespace

bool logEnabledSlow(LogLevel level, uint32_t subsys) {
  const LogConfig& cfg = config();
  if (static_cast<int>(level) > static_cast<int>(cfg.level)) return false;
  // Warnings always pass the subsystem filter.
  return level <= LogLevel::kWarn || (cfg.subsys & subsys) != 0;
}

namespace {

void writeLine(FILE* out, const char* host, LogLevel level, const char* where, const char* msg) {
  char lineBuf[1500];
  int n = snprintf(lineBuf, sizeof(lineBuf), "%s:%d:%ld CC %s %s%s\n", host, getpid(),
                   static_cast<long>(syscall(SYS_gettid)), levelName(level), where, msg);
  if (n > 0) fwrite(lineBuf, 1, std::min<size_t>(n, sizeof(lineBuf) - 1), out);
}

}  // namespace

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
  char where[300];
  snprintf(where, sizeof(where), "%s:%d ", base, line);
  writeLine(cfg.out, cfg.host, level, where, msg);
}

void logAlways(LogLevel level, const char* fmt, ...) {
  char msg[1200], host[64] = {};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  gethostname(host, sizeof(host) - 1);
  writeLine(stderr, host, level, "", msg);
}

}  // namespace collcomm::detail
