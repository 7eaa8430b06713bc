// JSON text for -J: one flat-ish object per line. The records hold numbers and short known strings
// (names, a hostname, argv), so a small writer that escapes strings per RFC 8259 is enough and
// keeps the perf binaries free of dependencies. Control tier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace collcomm::perf {

// "text" with quotes, backslashes and control characters escaped.
std::string jsonString(const std::string& text);
// [a,b,...] from items that are already JSON.
std::string jsonArray(const std::vector<std::string>& items);

// Builds {"k":v,...} with keys in the order added.
class JsonObject {
 public:
  JsonObject& str(const char* key, const std::string& value);
  JsonObject& integer(const char* key, int64_t value);
  JsonObject& number(const char* key, double value);  // non-finite values become null
  JsonObject& boolean(const char* key, bool value);
  JsonObject& null(const char* key);
  JsonObject& raw(const char* key, const std::string& json);  // a nested object or array
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void key(const char* k);
  std::string body_;
};

}  // namespace collcomm::perf
