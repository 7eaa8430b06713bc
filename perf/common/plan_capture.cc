// Plans through ccCommDescribePlan. The perf binaries are user programs, so they read
// COLLCOMM_DEBUG themselves (the library's own reads stay in src/common/params).
#include "common/plan_capture.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/fail.h"

namespace collcomm::perf {
namespace {

// The value of "name" in the library's plan JSON: a flat object of numbers, booleans and strings
// with no escapes in them (docs/env.md, "Plans"), so a search for the key is enough.
std::string field(const std::string& json, const char* name) {
  const std::string key = std::string("\"") + name + "\":";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "";
  size_t begin = at + key.size(), end;
  if (json[begin] == '"') {
    end = json.find('"', ++begin);
  } else {
    end = json.find_first_of(",}", begin);
  }
  return end == std::string::npos ? "" : json.substr(begin, end - begin);
}

}  // namespace

bool PlanCapture::active() {
  static const bool on = [] {
    const char* level = getenv("COLLCOMM_DEBUG");
    const char* file = getenv("COLLCOMM_DEBUG_FILE");
    return level != nullptr && (strcasecmp(level, "INFO") == 0 || strcasecmp(level, "TRACE") == 0) &&
           (file == nullptr || *file == '\0');
  }();
  return on;
}

std::vector<PlanInfo> PlanCapture::describe(ccComm_t comm, const char* collective, size_t count, ccDataType_t type,
                                            int root) {
  static const char* const kPlanned[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  bool planned = false;
  for (const char* k : kPlanned) planned = planned || strcmp(k, collective) == 0;
  if (!planned) return {};
  size_t needed = 0;
  CC_PERF_CHECK(ccCommDescribePlan(comm, collective, count, type, root, nullptr, 0, &needed));
  std::string json(needed, '\0');
  CC_PERF_CHECK(ccCommDescribePlan(comm, collective, count, type, root, json.data(), json.size(), &needed));
  json.resize(needed - 1);
  PlanInfo p;
  p.algorithm = field(json, "algorithm");
  p.protocol = field(json, "protocol");
  p.channels = atoi(field(json, "channels").c_str());
  return {p};
}

}  // namespace collcomm::perf
