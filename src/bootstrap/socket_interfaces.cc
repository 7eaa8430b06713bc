// Network interface listing and selection: COLLCOMM_SOCKET_IFNAME / COLLCOMM_SOCKET_FAMILY with
// NCCL_SOCKET_IFNAME's rules (prefix list, ^ excludes, = exact) and its default preference order.
#include <ifaddrs.h>
#include <net/if.h>
#include <strings.h>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {

IfnameFilter IfnameFilter::parse(const std::string& spec) {
  IfnameFilter f;
  size_t pos = 0;
  if (pos < spec.size() && spec[pos] == '^') {
    f.exclude_ = true;
    ++pos;
  }
  if (pos < spec.size() && spec[pos] == '=') {
    f.exact_ = true;
    ++pos;
  }
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string name = spec.substr(pos, comma - pos);
    if (!name.empty()) f.names_.push_back(name);
    pos = comma + 1;
  }
  return f;
}

bool IfnameFilter::matches(const std::string& ifname) const {
  bool listed = false;
  for (const std::string& n : names_) {
    if (exact_ ? ifname == n : ifname.compare(0, n.size(), n) == 0) {
      listed = true;
      break;
    }
  }
  return listed != exclude_;
}

std::vector<NetInterface> listInterfaces() {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    size_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (family == AF_INET6) {
      const auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;
    }
    NetInterface ni;
    ni.name = i->ifa_name;
    if (!SocketAddress::fromSockaddr(i->ifa_addr, len, &ni.addr)) continue;
    ni.addr.setPort(0);
    out.push_back(std::move(ni));
  }
  freeifaddrs(list);
  return out;
}

namespace {

std::vector<NetInterface> pick(const std::vector<NetInterface>& all, const IfnameFilter& filter, int family,
                               size_t maxCount) {
  std::vector<NetInterface> out;
  for (const NetInterface& ni : all) {
    if (out.size() >= maxCount) break;
    if (family != AF_UNSPEC && ni.addr.family() != family) continue;
    if (!filter.matches(ni.name)) continue;
    bool seen = false;
    for (const NetInterface& o : out) seen = seen || o.name == ni.name;
    if (!seen) out.push_back(ni);
  }
  return out;
}

}  // namespace

std::vector<NetInterface> selectInterfaces(const std::vector<NetInterface>& all, const std::string& spec, int family,
                                           size_t maxCount) {
  if (!spec.empty()) return pick(all, IfnameFilter::parse(spec), family, maxCount);
  // Fast fabrics first; container bridges and loopback only when nothing else exists.
  for (const char* fallback : {"ib", "^docker,lo", "docker", "lo"}) {
    std::vector<NetInterface> out = pick(all, IfnameFilter::parse(fallback), family, maxCount);
    if (!out.empty()) return out;
  }
  return {};
}

int socketFamilyParam() {
  std::string f = paramStr(Param::kSocketFamily);
  if (f.empty()) return AF_UNSPEC;
  if (strcasecmp(f.c_str(), "AF_INET") == 0) return AF_INET;
  if (strcasecmp(f.c_str(), "AF_INET6") == 0) return AF_INET6;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    CC_WARN("COLLCOMM_SOCKET_FAMILY=\"%s\" is not AF_INET or AF_INET6; ignoring it", f.c_str());
  return AF_UNSPEC;
}

Status findInterfaces(size_t maxCount, std::vector<NetInterface>* out) {
  std::string spec = paramStr(Param::kSocketIfname);
  int family = socketFamilyParam();
  std::vector<NetInterface> all = listInterfaces();
  std::vector<NetInterface> found = selectInterfaces(all, spec, family, maxCount);
  if (found.empty()) {
    std::string names;
    for (const NetInterface& ni : all) names += (names.empty() ? "" : ", ") + ni.name + " " + ni.addr.hostString();
    if (names.empty()) names = "none";
    if (!spec.empty()) {
      return CC_ERROR(Status::kInvalidArgument,
                      "COLLCOMM_SOCKET_IFNAME=\"%s\"%s matches no interface with an address (interfaces: %s)",
                      spec.c_str(), family == AF_UNSPEC ? "" : " with COLLCOMM_SOCKET_FAMILY", names.c_str());
    }
    return CC_ERROR(Status::kSystemError, "no network interface with an address%s was found (interfaces: %s)",
                    family == AF_UNSPEC ? "" : " of COLLCOMM_SOCKET_FAMILY", names.c_str());
  }
  for (const NetInterface& ni : found)
    CC_INFO(kSubsysBootstrap, "socket interface %s %s", ni.name.c_str(), ni.addr.hostString().c_str());
  *out = std::move(found);
  return kOk;
}

}  // namespace collcomm::detail
