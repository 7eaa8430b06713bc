// XmlElement accessors and the serializer (escaping, two-space indentation).
#include "topo/xml_tree.h"

namespace collcomm::detail {

const std::string* XmlElement::attr(std::string_view key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

void XmlElement::setAttr(std::string_view key, std::string value) {
  for (auto& [k, v] : attrs) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(std::string(key), std::move(value));
}

void XmlElement::initAttr(std::string_view key, std::string value) {
  if (!hasAttr(key)) attrs.emplace_back(std::string(key), std::move(value));
}

XmlElement& XmlElement::addChild(std::string childName) {
  children.emplace_back();
  children.back().name = std::move(childName);
  return children.back();
}

const XmlElement* XmlElement::child(std::string_view childName) const {
  for (const auto& c : children)
    if (c.name == childName) return &c;
  return nullptr;
}

XmlElement* XmlElement::child(std::string_view childName) {
  for (auto& c : children)
    if (c.name == childName) return &c;
  return nullptr;
}

namespace {

void appendEscaped(std::string* out, const std::string& s) {
  for (char c : s) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      case '\n': *out += "&#10;"; break;
      case '\t': *out += "&#9;"; break;
      case '\r': *out += "&#13;"; break;
      default: *out += c;
    }
  }
}

void appendElement(std::string* out, const XmlElement& e, int depth) {
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += '<';
  *out += e.name;
  for (const auto& [k, v] : e.attrs) {
    *out += ' ';
    *out += k;
    *out += "=\"";
    appendEscaped(out, v);
    *out += '"';
  }
  if (e.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const auto& c : e.children) appendElement(out, c, depth + 1);
  out->append(static_cast<size_t>(depth) * 2, ' ');
  *out += "</";
  *out += e.name;
  *out += ">\n";
}

}  // namespace

std::string serializeXml(const XmlElement& root) {
  std::string out = "<?xml version=\"1.0\"?>\n";
  appendElement(&out, root, 0);
  return out;
}

}  // namespace collcomm::detail
