// Environment reading for every declared COLLCOMM_* variable, and the warnings about values that
// are not accepted (always on: a misspelt setting must never be ignored silently).
#include "common/params.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "common/log.h"

extern char** environ;

namespace collcomm::detail {
namespace {

const ParamInfo* makeParams() {
  static ParamInfo params[] = {
#define CC_PARAM_INFO(id, type, name, def, doc) {name, #type[0] == 'I', def, doc, INT64_MIN, INT64_MAX, nullptr},
      CC_PARAM_LIST(CC_PARAM_INFO)
#undef CC_PARAM_INFO
  };
#define CC_PARAM_RANGE(id, lo, hi)                     \
  params[static_cast<int>(Param::k##id)].least = (lo); \
  params[static_cast<int>(Param::k##id)].most = (hi);
  CC_PARAM_RANGES(CC_PARAM_RANGE)
#undef CC_PARAM_RANGE
#define CC_PARAM_WORD_LIST(id, list) params[static_cast<int>(Param::k##id)].words = (list);
  CC_PARAM_WORDS(CC_PARAM_WORD_LIST)
#undef CC_PARAM_WORD_LIST
  return params;
}

// Built on first use, so that a read during another file's static initialisation finds it.
const ParamInfo* params() {
  static const ParamInfo* const table = makeParams();
  return table;
}

bool parseInt(const char* s, int64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno != 0 || end == s) return false;
  while (*end == ' ') ++end;
  if (*end != '\0') return false;
  *out = v;
  return true;
}

// "a|b|c" -> "a, b, c"
std::string listWords(const char* words) {
  std::string out;
  for (const char* w = words; *w != '\0'; ++w) out += (*w == '|') ? std::string(", ") : std::string(1, *w);
  return out;
}

// The declared spelling of `value` among `words`, or "" when it is not one.
std::string matchWord(const char* words, const std::string& value) {
  for (const char* w = words; *w != '\0';) {
    const size_t len = strcspn(w, "|");
    if (len == value.size() && strncasecmp(w, value.c_str(), len) == 0) return std::string(w, len);
    w += len + (w[len] == '|');
  }
  return "";
}

std::string defaultText(const ParamInfo& info) {
  return info.defaultValue[0] != '\0' ? std::string("the default ") + info.defaultValue : "the default (unset)";
}

// The once-per-process check for unknown COLLCOMM_* names, run by the first read of any variable.
void warnUnknownNamesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<std::string> unknown = unknownParamNames();
    if (unknown.empty()) return;
    std::string names;
    for (const std::string& n : unknown) names += (names.empty() ? "" : ", ") + n;
    logAlways(LogLevel::kWarn,
              "%s %s set, but collcomm has no such variable%s (a typo? docs/env.md lists them all); "
              "ignored",
              names.c_str(), unknown.size() == 1 ? "is" : "are", unknown.size() == 1 ? "" : "s");
  });
}

// The accepted value of p as the reader should see it; false: unset, empty or not accepted (the
// last warned about).
bool readValue(Param p, std::string* out) {
  warnUnknownNamesOnce();
  const ParamInfo& info = paramInfo(p);
  const char* s = getenv(info.name);
  if (s == nullptr || *s == '\0') return false;
  if (info.isInt) {
    int64_t v = 0;
    if (!parseInt(s, &v)) {
      warnBadParam(p, s, "is not an integer", "using " + defaultText(info));
      return false;
    }
    if (v < info.least || v > info.most) {
      warnBadParam(p, s, "is out of range (" + std::to_string(info.least) + " to " + std::to_string(info.most) + ")",
                   "using " + defaultText(info));
      return false;
    }
    *out = s;
    return true;
  }
  if (info.words != nullptr) {
    std::string word = matchWord(info.words, s);
    if (word.empty()) {
      warnBadParam(p, s, "is not one of " + listWords(info.words), "using " + defaultText(info));
      return false;
    }
    *out = word;
    return true;
  }
  *out = s;
  return true;
}

}  // namespace

const ParamInfo& paramInfo(Param p) { return params()[static_cast<int>(p)]; }

bool paramIsSet(Param p) {
  std::string ignored;
  return readValue(p, &ignored);
}

int64_t paramInt(Param p) {
  std::string s;
  int64_t v = 0;
  if (readValue(p, &s) && parseInt(s.c_str(), &v)) return v;
  parseInt(paramInfo(p).defaultValue, &v);
  return v;
}

std::string paramStr(Param p) {
  std::string s;
  return readValue(p, &s) ? s : std::string(paramInfo(p).defaultValue);
}

void warnBadParam(Param p, const std::string& value, const std::string& problem, const std::string& instead) {
  static std::mutex mu;
  static std::set<std::string> warned;
  const std::string key = std::string(paramInfo(p).name) + "=" + value;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(key).second) return;
  }
  logAlways(LogLevel::kWarn, "%s=\"%s\" %s; %s", paramInfo(p).name, value.c_str(), problem.c_str(), instead.c_str());
}

std::vector<std::string> unknownParamNames() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (strncmp(*e, "COLLCOMM_", 9) != 0) continue;
    const std::string name(*e, strcspn(*e, "="));
    bool known = false;
    for (int i = 0; i < static_cast<int>(Param::kCount) && !known; ++i) known = name == params()[i].name;
    if (!known) out.push_back(name);
  }
  return out;
}

void logEffectiveParams() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
      const Param p = static_cast<Param>(i);
      std::string value;
      const bool set = readValue(p, &value);
      const char* raw = getenv(paramInfo(p).name);
      CC_INFO(kSubsysEnv, "%s=%s%s", paramInfo(p).name, set ? value.c_str() : paramInfo(p).defaultValue,
              set                                ? " (set)"
              : (raw != nullptr && *raw != '\0') ? " (default: the value set is not accepted)"
                                                 : " (default)");
    }
  });
}

}  // namespace collcomm::detail
