// The OFI backend's devices: which libfabric provider it uses and over which of its domains.
//
// Provider: COLLCOMM_OFI_PROVIDER when set (a name as fi_info prints it: "tcp" also finds the
// layered "tcp;ofi_rxm"; the exact name wins where both offer reliable tagged endpoints), else the
// first of kPreferred that fi_getinfo offers. tcp's own reliable endpoints (libfabric 1.18 on)
// come before rxm over tcp: over libfabric 2.6 on loopback they moved 0.88 of the socket backend's
// busbw at 1 MiB and 0.98-1.06 beyond, rxm over the same tcp 0.5-0.6 (docs/net.md, "tcp's own
// endpoints"); libfabric 1.17's tcp has none, so there rxm still carries it. Providers that
// cannot carry collcomm's connections are never chosen by default: "shm" reaches only this host,
// "udp;ofi_rxd", "sockets" and "net" are slow or experimental in libfabric 1.17 (each may still be
// asked for by name).
//
// Domains: a provider that works over IP interfaces (tcp) offers one domain per interface and
// address; those are filtered by COLLCOMM_SOCKET_IFNAME and COLLCOMM_SOCKET_FAMILY as the socket
// backend's interfaces are, in the same order. Other providers' domains (verbs and efa devices,
// shm) are taken as fi_getinfo lists them.
//
// Every endpoint must offer: reliable datagrams (FI_EP_RDM), tagged messages, send-after-send
// ordering (FI_ORDER_SAS: the messages of one connection arrive in the order posted) and the
// memory registration modes the backend honours (kMrModes). Setup tier.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "common/params.h"
#include "transport/net/net_ofi_internal.h"

namespace collcomm::detail::netofi {
namespace {

const char* const kPreferred[] = {"verbs;ofi_rxm", "efa", "tcp", "tcp;ofi_rxm"};
const char* const kNeverByDefault[] = {"shm", "udp;ofi_rxd", "sockets", "net", "net;ofi_rxm"};

// FI_MR_LOCAL: every buffer registered (net_ofi_endpoint.cc registers what the caller did not);
// FI_MR_ALLOCATED, FI_MR_VIRT_ADDR, FI_MR_PROV_KEY: what a registration of our own allocated
// memory satisfies; FI_MR_HMEM: device buffers registered (the caller's regMr of device memory).
constexpr int kMrModes = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_HMEM;

std::mutex g_mu;
bool g_inited = false;
std::string g_key;  // the settings the device list was made under
// Devices live as long as the process (open endpoints may use one until exit), so the lists are
// never destroyed: exit handlers destroying them would leave the devices unreferenced (a leak to
// LeakSanitizer) while an endpoint might still be closing.
std::vector<Device*>& g_devs = *new std::vector<Device*>;
// Devices of earlier settings: open endpoints may still use them.
std::vector<Device*>& g_retired = *new std::vector<Device*>;
std::string g_noDevices;         // why there are none, when there are none

bool oneOf(const std::string& name, const char* const* list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (name == list[i]) return true;
  return false;
}

// The IP address of a tcp-style domain's info ("" when it has none).
std::string infoAddress(const fi_info* info, int* family) {
  *family = AF_UNSPEC;
  if (info->src_addr == nullptr) return "";
  SocketAddress a;
  if (!SocketAddress::fromSockaddr(info->src_addr, info->src_addrlen, &a)) return "";
  *family = a.family();
  return a.hostString();
}

int linkSpeedMbps(const fi_info* info) {
  if (info->nic != nullptr && info->nic->link_attr != nullptr && info->nic->link_attr->speed != 0)
    return static_cast<int>(info->nic->link_attr->speed / 1000000);
  std::string path = std::string("/sys/class/net/") + info->domain_attr->name + "/speed";
  int speed = 0;
  if (FILE* f = fopen(path.c_str(), "r")) {
    if (fscanf(f, "%d", &speed) != 1 || speed < 0) speed = 0;
    fclose(f);
  }
  return speed;
}

fi_info* makeHints(const Lib* l, const std::string& provider) {
  fi_info* h = l->dupinfo(nullptr);
  if (h == nullptr) return nullptr;
  h->caps = FI_TAGGED | FI_SEND | FI_RECV;
  h->mode = FI_CONTEXT | FI_CONTEXT2;  // every operation's context is a Request or CtrlOp (fi_context2 first)
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->mr_mode = kMrModes;
  h->domain_attr->threading = FI_THREAD_DOMAIN;  // one comm per domain, used by one thread at a time
  h->tx_attr->msg_order = FI_ORDER_SAS;
  h->rx_attr->msg_order = FI_ORDER_SAS;
  if (!provider.empty()) h->fabric_attr->prov_name = strdup(provider.c_str());
  return h;
}

}  // namespace

std::string chooseProvider(const std::vector<std::string>& offered, const std::string& asked) {
  auto has = [&](const std::string& n) {
    for (const std::string& o : offered)
      if (o == n) return true;
    return false;
  };
  if (!asked.empty()) {
    if (has(asked)) return asked;
    for (const char* p : kPreferred)
      if (has(p)) return p;
    return offered.empty() ? "" : offered.front();
  }
  for (const char* p : kPreferred)
    if (has(p)) return p;
  for (const std::string& o : offered)
    if (!oneOf(o, kNeverByDefault, std::size(kNeverByDefault))) return o;
  return "";
}

namespace {

// The provider's domains in the order the devices take them (see the banner).
std::vector<const fi_info*> chooseDomains(const fi_info* list, const std::string& provider,
                                          std::vector<NetInterface>* ifs) {
  std::vector<const fi_info*> mine;
  for (const fi_info* i = list; i != nullptr; i = i->next)
    if (provider == i->fabric_attr->prov_name) mine.push_back(i);
  bool ipBased = false;
  for (const fi_info* i : mine) {
    int family;
    if (!infoAddress(i, &family).empty()) ipBased = true;
  }
  std::vector<const fi_info*> out;
  if (!ipBased) {
    for (const fi_info* i : mine) {
      bool seen = false;
      for (const fi_info* o : out) seen |= strcmp(o->domain_attr->name, i->domain_attr->name) == 0;
      if (!seen) out.push_back(i);
    }
    return out;
  }
  if (!isOk(findInterfaces(16, ifs))) return out;
  for (const NetInterface& ni : *ifs) {
    for (const fi_info* i : mine) {
      int family;
      if (i->domain_attr->name == ni.name && infoAddress(i, &family) == ni.addr.hostString()) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

Status findDevices(const std::string& asked) {
  std::string why;
  const Lib* l = lib(&why);
  if (l == nullptr) {
    g_noDevices = why;
    return kOk;
  }
  fi_info* hints = makeHints(l, asked);
  if (hints == nullptr) return CC_ERROR(Status::kSystemError, "net/ofi: fi_dupinfo failed (out of memory?)");
  fi_info* list = nullptr;
  const int rc = l->getinfo(apiVersion(), nullptr, nullptr, 0, hints, &list);
  l->freeinfo(hints);
  if (rc != 0 || list == nullptr) {
    g_noDevices = "libfabric offers no " + (asked.empty() ? std::string("provider") : "provider \"" + asked + "\"") +
                  " with reliable tagged endpoints (fi_getinfo: " + fiError(rc) + ")";
    return kOk;
  }
  std::vector<std::string> offered;
  for (const fi_info* i = list; i != nullptr; i = i->next) offered.push_back(i->fabric_attr->prov_name);
  const std::string provider = chooseProvider(offered, asked);
  std::vector<NetInterface> ifs;
  const std::vector<const fi_info*> domains =
      provider.empty() ? std::vector<const fi_info*>{} : chooseDomains(list, provider, &ifs);
  for (const fi_info* i : domains) {
    auto* d = new Device();
    d->info = l->dupinfo(i);
    if (d->info == nullptr) {
      delete d;
      continue;
    }
    d->provider = provider;
    int family;
    const std::string addr = infoAddress(i, &family);
    snprintf(d->props.name, sizeof(d->props.name), "%s", i->domain_attr->name);
    snprintf(d->props.address, sizeof(d->props.address), "%s", addr.empty() ? provider.c_str() : addr.c_str());
    d->props.guid = g_devs.size();
    d->props.speedMbps = linkSpeedMbps(i);
    d->props.latencyUs = 0;
    d->props.maxComms = 65536;
    d->props.maxRecvs = 1;
    d->props.maxMessageBytes = i->ep_attr->max_msg_size < (1ull << 40) ? i->ep_attr->max_msg_size : (1ull << 40);
    d->props.supportsDeviceMemory = (i->caps & FI_HMEM) != 0;
    g_devs.push_back(d);
    CC_INFO(kSubsysNet, "net/ofi: device %zu is %s %s (%s), speed %d Mb/s, mr_mode 0x%x%s", g_devs.size() - 1,
            provider.c_str(), d->props.name, d->props.address, d->props.speedMbps, i->domain_attr->mr_mode,
            d->props.supportsDeviceMemory ? ", device memory" : "");
  }
  if (g_devs.empty()) {
    std::string offered;
    for (const fi_info* i = list; i != nullptr; i = i->next) {
      const std::string p = i->fabric_attr->prov_name;
      if (offered.find(p) == std::string::npos) offered += (offered.empty() ? "" : ", ") + p;
    }
    g_noDevices = provider.empty() ? "libfabric offers no provider collcomm uses by default (offered: " + offered +
                                         "); name one with COLLCOMM_OFI_PROVIDER"
                                   : "libfabric's provider " + provider +
                                         " has no domain on the interfaces COLLCOMM_SOCKET_IFNAME selects";
  }
  l->freeinfo(list);
  return kOk;
}

// Finds the devices; again when COLLCOMM_OFI_PROVIDER, COLLCOMM_SOCKET_IFNAME or
// COLLCOMM_SOCKET_FAMILY changed since (devices found before stay valid for their endpoints).
// Caller holds g_mu.
Status refresh() {
  const std::string asked = paramStr(Param::kOfiProvider);
  const std::string key = asked + "|" + paramStr(Param::kSocketIfname) + "|" + paramStr(Param::kSocketFamily);
  if (g_inited && key == g_key) return kOk;
  g_retired.insert(g_retired.end(), g_devs.begin(), g_devs.end());
  g_devs.clear();
  g_noDevices.clear();
  CC_CHECK(findDevices(asked));
  g_inited = true;
  g_key = key;
  if (g_devs.empty()) CC_INFO(kSubsysNet, "net/ofi: no devices: %s", g_noDevices.c_str());
  return kOk;
}

// No device is an error here (devices() reports none without one): init is called where
// COLLCOMM_NET=ofi asked for the backend, and it cannot be had.
}  // namespace

Status ofiInit() {
  std::lock_guard<std::mutex> lock(g_mu);
  CC_CHECK(refresh());
  if (g_devs.empty()) return CC_ERROR(Status::kSystemError, "net/ofi: COLLCOMM_NET=ofi, but %s", g_noDevices.c_str());
  return kOk;
}

Status ofiDevices(int* count) {
  std::lock_guard<std::mutex> lock(g_mu);
  CC_CHECK(refresh());
  *count = static_cast<int>(g_devs.size());
  return kOk;
}

Status deviceAt(int dev, Device** out) {
  std::lock_guard<std::mutex> lock(g_mu);
  CC_CHECK(refresh());
  if (dev < 0 || dev >= static_cast<int>(g_devs.size()))
    return CC_ERROR(Status::kInternalError, "net/ofi: no device %d (there are %zu)", dev, g_devs.size());
  Device* d = g_devs[dev];
  if (d->fabric == nullptr) {
    const int rc = lib(nullptr)->fabric(d->info->fabric_attr, &d->fabric, nullptr);
    if (rc != 0)
      return CC_ERROR(Status::kSystemError, "net/ofi: cannot open the fabric of %s %s: %s", d->provider.c_str(),
                      d->props.name, fiError(rc).c_str());
  }
  *out = d;
  return kOk;
}

Status ofiGetProperties(int dev, NetProperties* props) {
  Device* d = nullptr;
  CC_CHECK(deviceAt(dev, &d));
  *props = d->props;
  return kOk;
}

}  // namespace collcomm::detail::netofi
