// The only reader of the environment. Each variable is declared in params_list.h; values are read
// when asked (setup tier), so a communicator created later sees a changed environment.
#pragma once

#include <cstdint>
#include <string>

#include "common/params_list.h"

namespace collcomm::detail {

enum class Param : int {
#define CC_PARAM_ENUM(id, type, name, def, doc) k##id,
  CC_PARAM_LIST(CC_PARAM_ENUM)
#undef CC_PARAM_ENUM
      kCount
};

struct ParamInfo {
  const char* name;
  bool isInt;
  const char* defaultValue;
  const char* doc;
};

const ParamInfo& paramInfo(Param p);
// Integer value (the default when unset or unparsable — the latter warns once).
int64_t paramInt(Param p);
// String value ("" when unset and the default is empty).
std::string paramStr(Param p);
// True when the user set the variable.
bool paramIsSet(Param p);
// Logs every variable's effective value at INFO (ENV subsystem), once per process.
void logEffectiveParams();

}  // namespace collcomm::detail
