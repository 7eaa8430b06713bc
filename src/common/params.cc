// Environment reading for every declared COLLCOMM_* variable.
#include "common/params.h"

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "common/log.h"

namespace collcomm::detail {
namespace {

const ParamInfo kParams[] = {
#define CC_PARAM_INFO(id, type, name, def, doc) {name, #type[0] == 'I', def, doc},
    CC_PARAM_LIST(CC_PARAM_INFO)
#undef CC_PARAM_INFO
};

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

}  // namespace

const ParamInfo& paramInfo(Param p) { return kParams[static_cast<int>(p)]; }

bool paramIsSet(Param p) { return getenv(paramInfo(p).name) != nullptr; }

int64_t paramInt(Param p) {
  const ParamInfo& info = paramInfo(p);
  int64_t def = 0;
  parseInt(info.defaultValue, &def);
  const char* s = getenv(info.name);
  if (s == nullptr) return def;
  int64_t v;
  if (!parseInt(s, &v)) {
    CC_WARN("%s=\"%s\" is not an integer; using the default %lld", info.name, s, static_cast<long long>(def));
    return def;
  }
  return v;
}

std::string paramStr(Param p) {
  const char* s = getenv(paramInfo(p).name);
  return s != nullptr ? std::string(s) : std::string(paramInfo(p).defaultValue);
}

void logEffectiveParams() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < static_cast<int>(Param::kCount); ++i) {
      const ParamInfo& info = kParams[i];
      const char* s = getenv(info.name);
      CC_INFO(kSubsysEnv, "%s=%s%s", info.name, s != nullptr ? s : info.defaultValue,
              s != nullptr ? " (set)" : " (default)");
    }
  });
}

}  // namespace collcomm::detail
