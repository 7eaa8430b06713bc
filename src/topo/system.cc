// TopoSystem storage, type names and bus-id text.
#include "topo/system.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace collcomm::detail {

const char* nodeTypeName(NodeType t) {
  static const char* const kNames[] = {"GPU", "PCI", "NVS", "CPU", "NIC", "NET"};
  int i = static_cast<int>(t);
  return i >= 0 && i < kNodeTypeCount ? kNames[i] : "?";
}

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::kLoc: return "LOC";
    case LinkType::kNvl: return "NVL";
    case LinkType::kC2c: return "C2C";
    case LinkType::kPci: return "PCI";
    case LinkType::kSys: return "SYS";
    case LinkType::kNet: return "NET";
  }
  return "?";
}

const char* pathTypeName(PathType t) {
  static const char* const kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  int i = static_cast<int>(t);
  return i >= 0 && i < kPathTypeCount ? kNames[i] : "?";
}

bool parsePathType(const std::string& s, PathType* out) {
  for (int i = 0; i < kPathTypeCount; ++i) {
    if (s == pathTypeName(static_cast<PathType>(i))) {
      *out = static_cast<PathType>(i);
      return true;
    }
  }
  // NCCL's old numeric levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS.
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || v < 0) return false;
    static const PathType kOld[] = {PathType::kLoc, PathType::kPix, PathType::kPxb, PathType::kPhb, PathType::kSys};
    *out = kOld[v > 4 ? 4 : v];
    return true;
  }
  return false;
}

NodeRef TopoSystem::addNode(NodeType t, int64_t id) {
  auto& v = nodes(t);
  v.emplace_back();
  v.back().type = t;
  v.back().id = id;
  pathsComputed_ = false;
  return NodeRef{t, static_cast<int>(v.size()) - 1};
}

int TopoSystem::find(NodeType t, int64_t id) const {
  const auto& v = nodes(t);
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].id == id) return static_cast<int>(i);
  return -1;
}

void TopoSystem::connect(NodeRef a, NodeRef b, LinkType type, float bw) {
  auto add = [&](NodeRef from, NodeRef to) {
    for (auto& l : node(from).links) {
      if (l.remote == to && l.type == type) {
        l.bw += bw;
        return;
      }
    }
    node(from).links.push_back(TopoLink{type, bw, to});
  };
  add(a, b);
  if (!(a == b)) add(b, a);
  pathsComputed_ = false;
}

void TopoSystem::resetPaths() {
  for (int f = 0; f < kNodeTypeCount; ++f) {
    for (int t = 0; t < kNodeTypeCount; ++t) {
      paths_[f][t].clear();
      if (keepsPaths(static_cast<NodeType>(f)) && keepsPaths(static_cast<NodeType>(t)))
        paths_[f][t].assign(static_cast<size_t>(count(static_cast<NodeType>(f))) * count(static_cast<NodeType>(t)), TopoPath{});
    }
  }
  pathsComputed_ = false;
}

const TopoPath& TopoSystem::path(NodeType from, int i, NodeType to, int j) const {
  return paths_[static_cast<int>(from)][static_cast<int>(to)][static_cast<size_t>(i) * count(to) + j];
}

TopoPath& TopoSystem::path(NodeType from, int i, NodeType to, int j) {
  return paths_[static_cast<int>(from)][static_cast<int>(to)][static_cast<size_t>(i) * count(to) + j];
}

std::string busIdToString(int64_t busId) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%04" PRIx64 ":%02x:%02x.%x", static_cast<uint64_t>(busId) >> 20,
           static_cast<unsigned>((busId >> 12) & 0xff), static_cast<unsigned>((busId >> 4) & 0xff),
           static_cast<unsigned>(busId & 0xf));
  return buf;
}

bool parseBusId(const std::string& s, int64_t* out) {
  // [domain:]bus:dev.fn, all hex.
  auto hexField = [](const std::string& f, int minDigits, int maxDigits, uint64_t* v) {
    if (static_cast<int>(f.size()) < minDigits || static_cast<int>(f.size()) > maxDigits) return false;
    uint64_t r = 0;
    for (char c : f) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
      r = r * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    *v = r;
    return true;
  };
  size_t dot = s.rfind('.');
  if (dot == std::string::npos) return false;
  size_t c2 = s.rfind(':', dot);
  if (c2 == std::string::npos) return false;
  size_t c1 = c2 == 0 ? std::string::npos : s.rfind(':', c2 - 1);
  uint64_t domain = 0, bus, dev, fn;
  if (c1 != std::string::npos) {
    if (!hexField(s.substr(0, c1), 1, 8, &domain)) return false;
  } else {
    c1 = static_cast<size_t>(-1);
  }
  if (!hexField(s.substr(c1 + 1, c2 - c1 - 1), 1, 2, &bus)) return false;
  if (!hexField(s.substr(c2 + 1, dot - c2 - 1), 1, 2, &dev)) return false;
  if (!hexField(s.substr(dot + 1), 1, 1, &fn)) return false;
  if (dev > 0x1f || fn > 7) return false;
  *out = static_cast<int64_t>((domain << 20) | (bus << 12) | (dev << 4) | fn);
  return true;
}

}  // namespace collcomm::detail
