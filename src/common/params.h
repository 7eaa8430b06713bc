// The only reader of the environment. Each variable is declared in params_list.h; values are read
// when asked (setup tier), so a communicator created later sees a changed environment.
//
// A value the variable does not accept (not an integer, out of its range, not one of its words)
// warns on stderr whatever COLLCOMM_DEBUG says — once per process for each variable and value,
// naming what is used instead — and then reads as unset: the default. The first read also warns,
// once, about COLLCOMM_* variables that collcomm does not know (likely typos).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  int64_t least, most;  // an INT's range (the whole int64 range where none is declared)
  const char* words;    // a STR's words, "a|b|c"; nullptr: any text
};

const ParamInfo& paramInfo(Param p);
// Integer value (the default when unset, empty or not accepted; the last warns).
int64_t paramInt(Param p);
// String value ("" when unset and the default is empty); for a variable with words, the word as
// declared (or the default when the value is not one, which warns).
std::string paramStr(Param p);
// True when the user set the variable to a value it accepts.
bool paramIsSet(Param p);
// Logs every variable's effective value at INFO (ENV subsystem), once per process.
void logEffectiveParams();

// Warns on stderr, whatever COLLCOMM_DEBUG says, once per process for each (variable, value):
// "<NAME>="<value>" <problem>; <instead>". For readers that check a value beyond what
// params_list.h declares (log.cc's levels and subsystems).
void warnBadParam(Param p, const std::string& value, const std::string& problem, const std::string& instead);

// Names of COLLCOMM_* variables in this environment that no Param declares.
std::vector<std::string> unknownParamNames();

}  // namespace collcomm::detail
