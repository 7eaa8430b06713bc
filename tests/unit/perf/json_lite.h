// A strict little JSON reader for the -J tests: parses one value (RFC 8259 grammar; numbers as
// double) and fails on anything else, trailing garbage included.
#pragma once

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace collcomm::test {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
  bool has(const std::string& k) const { return kind == kObject && object.count(k) != 0; }
  const Json& at(const std::string& k) const { return object.at(k); }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}
  // True when the whole text is one valid value.
  bool parse(Json* out) {
    pos_ = 0;
    if (!value(out, 0)) return false;
    space();
    return pos_ == s_.size();
  }

 private:
  void space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    const size_t n = strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  bool str(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u':
          if (pos_ + 4 > s_.size()) return false;
          for (int i = 0; i < 4; ++i)
            if (!isxdigit(static_cast<unsigned char>(s_[pos_ + i]))) return false;
          *out += '?';
          pos_ += 4;
          break;
        default:
          return false;
      }
    }
    return false;
  }
  bool value(Json* v, int depth) {
    if (depth > 32) return false;
    space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == 'n') return literal("null") && (v->kind = Json::kNull, true);
    if (c == 't') return literal("true") && (v->kind = Json::kBool, v->boolean = true, true);
    if (c == 'f') return literal("false") && (v->kind = Json::kBool, v->boolean = false, true);
    if (c == '"') {
      v->kind = Json::kString;
      return str(&v->string);
    }
    if (c == '[') {
      v->kind = Json::kArray;
      ++pos_;
      space();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        Json item;
        if (!value(&item, depth + 1)) return false;
        v->array.push_back(std::move(item));
        space();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ']') return ++pos_, true;
        if (s_[pos_++] != ',') return false;
      }
    }
    if (c == '{') {
      v->kind = Json::kObject;
      ++pos_;
      space();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        space();
        std::string key;
        if (!str(&key)) return false;
        space();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
        Json item;
        if (!value(&item, depth + 1)) return false;
        if (v->object.count(key) != 0) return false;  // duplicate key
        v->object.emplace(key, std::move(item));
        space();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == '}') return ++pos_, true;
        if (s_[pos_++] != ',') return false;
      }
    }
    // Number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[pos_]))) return false;
    if (s_[pos_] == '0')
      ++pos_;
    else
      while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (pos_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[pos_]))) return false;
      while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !isdigit(static_cast<unsigned char>(s_[pos_]))) return false;
      while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    v->kind = Json::kNumber;
    v->number = strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace collcomm::test
