// A generic XML element tree: what a topology file parses into, what detection fills in, what a
// dump writes out. It knows nothing about topology semantics (system_from_xml.cc does). Setup tier.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace collcomm::detail {

struct XmlElement {
  std::string name;
  // Attributes in document order; names are unique within one element.
  std::vector<std::pair<std::string, std::string>> attrs;
  std::vector<XmlElement> children;
  // 1-based line of the start tag in the file it came from; 0 when built in memory.
  int line = 0;

  // The attribute's value, or nullptr when absent. The pointer lives until attrs changes.
  const std::string* attr(std::string_view key) const;
  bool hasAttr(std::string_view key) const { return attr(key) != nullptr; }
  // Sets (replacing) an attribute, keeping its position if it exists.
  void setAttr(std::string_view key, std::string value);
  // Sets it only when absent.
  void initAttr(std::string_view key, std::string value);
  XmlElement& addChild(std::string childName);
  // First child with this name, or nullptr.
  const XmlElement* child(std::string_view childName) const;
  XmlElement* child(std::string_view childName);
};

// Parses XML text into *root (the document element). `source` names the input in error
// sentences ("file.xml"). Malformed input returns kInvalidArgument with the line and what the
// parser expected; it never crashes on any input. Entities are not expanded, the network is never
// touched, and nesting deeper than 64 elements is rejected.
Status parseXml(std::string_view text, const std::string& source, XmlElement* root);

// The element as indented XML text with an XML declaration; values are escaped.
std::string serializeXml(const XmlElement& root);

}  // namespace collcomm::detail
