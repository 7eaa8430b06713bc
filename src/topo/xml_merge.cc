// mergeTopologyXml: identity keys per element kind, file-wins attribute merge.
#include "topo/xml_merge.h"

#include <algorithm>
#include <string>
#include <vector>

#include "topo/system.h"

namespace collcomm::detail {
namespace {

const char* identityKey(const std::string& name) {
  if (name == "cpu") return "numaid";
  if (name == "pci") return "busid";
  if (name == "net") return "name";
  if (name == "nvlink") return "target";
  return nullptr;
}

// Bus ids compare as numbers, so "0000:17:00.0" matches "17:00.0".
bool sameKey(const std::string& name, const std::string& a, const std::string& b) {
  if (name == "pci" || name == "nvlink") {
    int64_t x, y;
    if (parseBusId(a, &x) && parseBusId(b, &y)) return x == y;
  }
  return a == b;
}

bool matches(const XmlElement& a, const XmlElement& b) {
  if (a.name != b.name) return false;
  const char* key = identityKey(a.name);
  if (key == nullptr) return true;
  const std::string* ka = a.attr(key);
  const std::string* kb = b.attr(key);
  if (ka == nullptr || kb == nullptr) return false;
  return sameKey(a.name, *ka, *kb);
}

constexpr const char* kNewMark = "collcomm-merge-new";

// Removes every <pci> with one of these bus ids under e, except those just appended (marked),
// and hands the removed ones to *removed.
void removeOldPci(XmlElement* e, const std::vector<std::string>& busids, std::vector<XmlElement>* removed) {
  auto& c = e->children;
  auto isOld = [&](const XmlElement& x) {
    const std::string* b = x.attr("busid");
    if (x.name != "pci" || b == nullptr || x.hasAttr(kNewMark)) return false;
    for (const auto& id : busids)
      if (sameKey("pci", *b, id)) return true;
    return false;
  };
  for (auto& x : c)
    if (isOld(x)) removed->push_back(x);
  c.erase(std::remove_if(c.begin(), c.end(), isOld), c.end());
  for (auto& x : c) removeOldPci(&x, busids, removed);
}

// Fills in what `under` knows and *top does not (top's attributes and children win).
void mergeUnder(XmlElement* top, const XmlElement& under) {
  for (const auto& [k, v] : under.attrs) top->initAttr(k, v);
  for (const auto& uc : under.children) {
    XmlElement* match = nullptr;
    for (auto& tc : top->children) {
      if (matches(tc, uc)) {
        match = &tc;
        break;
      }
    }
    if (match != nullptr) {
      mergeUnder(match, uc);
    } else if (uc.name != "pci") {  // devices below stay where the file put them
      top->children.push_back(uc);
    }
  }
}

XmlElement* findMarked(XmlElement* e, const std::string& busid) {
  for (auto& c : e->children) {
    const std::string* b = c.attr("busid");
    if (c.name == "pci" && c.hasAttr(kNewMark) && b != nullptr && sameKey("pci", *b, busid)) return &c;
    if (XmlElement* f = findMarked(&c, busid)) return f;
  }
  return nullptr;
}

void stripMarks(XmlElement* e) {
  auto& a = e->attrs;
  a.erase(std::remove_if(a.begin(), a.end(), [](const auto& kv) { return kv.first == kNewMark; }), a.end());
  for (auto& x : e->children) stripMarks(&x);
}

// Marks every <pci> of a just-appended subtree and records its bus id.
void markNew(XmlElement* e, std::vector<std::string>* appendedPci) {
  if (e->name == "pci") {
    if (const std::string* b = e->attr("busid")) {
      appendedPci->push_back(*b);
      e->setAttr(kNewMark, "1");
    }
  }
  for (auto& c : e->children) markNew(&c, appendedPci);
}

void mergeInto(XmlElement* base, const XmlElement& over, std::vector<std::string>* appendedPci) {
  for (const auto& [k, v] : over.attrs) base->setAttr(k, v);
  for (const auto& oc : over.children) {
    XmlElement* match = nullptr;
    for (auto& bc : base->children) {
      if (matches(bc, oc)) {
        match = &bc;
        break;
      }
    }
    if (match != nullptr) {
      mergeInto(match, oc, appendedPci);
      continue;
    }
    base->children.push_back(oc);
    markNew(&base->children.back(), appendedPci);
  }
}

}  // namespace

void mergeTopologyXml(XmlElement* base, const XmlElement& over) {
  std::vector<std::string> appended;
  mergeInto(base, over, &appended);
  if (!appended.empty()) {
    // A device the file moved keeps what detection learnt about it (<gpu>, <nic>, attributes).
    std::vector<XmlElement> removed;
    removeOldPci(base, appended, &removed);
    for (const XmlElement& old : removed)
      if (XmlElement* now = findMarked(base, *old.attr("busid"))) mergeUnder(now, old);
  }
  stripMarks(base);
}

}  // namespace collcomm::detail
