#include "common/json.h"

#include <cmath>
#include <cstdio>

namespace collcomm::perf {

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string jsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ",";
    out += items[i];
  }
  return out + "]";
}

void JsonObject::key(const char* k) {
  if (!body_.empty()) body_ += ",";
  body_ += jsonString(k);
  body_ += ":";
}

JsonObject& JsonObject::str(const char* k, const std::string& value) {
  key(k);
  body_ += jsonString(value);
  return *this;
}

JsonObject& JsonObject::integer(const char* k, int64_t value) {
  key(k);
  body_ += std::to_string(value);
  return *this;
}

JsonObject& JsonObject::number(const char* k, double value) {
  key(k);
  if (!std::isfinite(value)) {
    body_ += "null";
  } else {
    char buf[40];
    snprintf(buf, sizeof(buf), "%.9g", value);
    body_ += buf;
  }
  return *this;
}

JsonObject& JsonObject::boolean(const char* k, bool value) {
  key(k);
  body_ += value ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::null(const char* k) {
  key(k);
  body_ += "null";
  return *this;
}

JsonObject& JsonObject::raw(const char* k, const std::string& json) {
  key(k);
  body_ += json;
  return *this;
}

}  // namespace collcomm::perf
