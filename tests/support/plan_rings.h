// The rings of a plan, read back from ccCommDescribePlan's JSON ("rings":[[0,1,2],[0,1,2]]), for
// tests that check the ring orders plan/rings.h chose.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "collcomm.h"

namespace collcomm::test {

// The "rings" array of a plan's JSON: one list of ranks per channel; empty when the plan runs on
// no rings or the field is missing.
inline std::vector<std::vector<int>> ringsOfPlanJson(const std::string& json) {
  std::vector<std::vector<int>> rings;
  const std::string key = "\"rings\":[";
  size_t at = json.find(key);
  if (at == std::string::npos) return rings;
  at += key.size();
  while (at < json.size() && json[at] == '[') {
    std::vector<int> ring;
    ++at;
    while (at < json.size() && json[at] != ']') {
      char* end = nullptr;
      ring.push_back(static_cast<int>(strtol(json.c_str() + at, &end, 10)));
      at = static_cast<size_t>(end - json.c_str());
      if (at < json.size() && json[at] == ',') ++at;
    }
    rings.push_back(ring);
    ++at;  // ']'
    if (at < json.size() && json[at] == ',') ++at;
  }
  return rings;
}

// The plan `comm` would follow for an AllReduce of `count` floats, as JSON ("" when
// ccCommDescribePlan fails).
inline std::string allReducePlanJson(ccComm_t comm, size_t count) {
  size_t needed = 0;
  if (ccCommDescribePlan(comm, "AllReduce", count, ccFloat32, 0, nullptr, 0, &needed) != ccSuccess) return "";
  std::string json(needed, '\0');
  if (ccCommDescribePlan(comm, "AllReduce", count, ccFloat32, 0, json.data(), json.size(), &needed) != ccSuccess)
    return "";
  json.resize(needed - 1);  // without the NUL
  return json;
}

}  // namespace collcomm::test
