// What the OFI backend does only over libfabric's tcp provider (alone, or under ofi_rxm), gated on
// the provider's name so that verbs, efa and shm never see it. Over tcp every message of a
// connection is the provider's header and the payload, one after the other on one TCP stream, as
// on the socket backend's control socket: so the same rule picks the Simple step that leaves in
// whole TCP segments (net.h wholeSegmentBytes; docs/net.md, "Steps in whole segments"), and its
// sockets get the buffers the socket backend gives its own (sizeSocketBuffers): the provider leaves
// them to the kernel's autotuning and has no setting for them, so the backend finds a connection's
// socket among the process's descriptors by its addresses. Setup tier.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"
#include "transport/net/net_socket_internal.h"

namespace collcomm::detail::netofi {
namespace {

// What precedes a tagged message on a tcp connection: the provider's header, 16 bytes of base
// header and the 8-byte tag (struct tcpx_tag_hdr in libfabric 1.17, xnet_tag_hdr from 1.18). rxm
// hands tagged messages to tcp as they are (its dynamic receive buffers, on by default) and adds
// no header of its own.
constexpr size_t kTcpTaggedHeaderBytes = 24;

// `name` (an endpoint's address as fi_getname gives it: a sockaddr over tcp) as a sockaddr, or false.
bool asSockaddr(const void* name, size_t len, sockaddr_storage* out) {
  if (len < sizeof(sa_family_t) || len > sizeof(*out)) return false;
  memset(out, 0, sizeof(*out));
  memcpy(out, name, len);
  return (out->ss_family == AF_INET && len >= sizeof(sockaddr_in)) ||
         (out->ss_family == AF_INET6 && len >= sizeof(sockaddr_in6));
}

// Same family and port, and the same address unless `want`'s is the wildcard.
bool sameAddress(const sockaddr_storage& got, const sockaddr_storage& want) {
  if (got.ss_family != want.ss_family) return false;
  if (want.ss_family == AF_INET) {
    const auto& g = reinterpret_cast<const sockaddr_in&>(got);
    const auto& w = reinterpret_cast<const sockaddr_in&>(want);
    return g.sin_port == w.sin_port &&
           (w.sin_addr.s_addr == htonl(INADDR_ANY) || g.sin_addr.s_addr == w.sin_addr.s_addr);
  }
  const auto& g = reinterpret_cast<const sockaddr_in6&>(got);
  const auto& w = reinterpret_cast<const sockaddr_in6&>(want);
  return g.sin6_port == w.sin6_port &&
         (IN6_IS_ADDR_UNSPECIFIED(&w.sin6_addr) || memcmp(&g.sin6_addr, &w.sin6_addr, sizeof(w.sin6_addr)) == 0);
}

// Sizes the buffers of the connected TCP socket of this process whose local (`local`) or remote
// address is `want`; false when there is none. The connection's socket is among the newest
// descriptors, so they are tried newest first and the search ends at the match: a process with
// many connections does not examine all its descriptors for each.
bool sizeSocketAt(const sockaddr_storage& want, bool local) {
  std::vector<int> fds;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (const dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long fd = strtol(e->d_name, &end, 10);
      if (end != e->d_name && *end == '\0' && fd != dirfd(dir)) fds.push_back(static_cast<int>(fd));
    }
    closedir(dir);
  }
  std::sort(fds.begin(), fds.end(), std::greater<int>());
  for (const int fd : fds) {
    sockaddr_storage self{}, peer{};
    socklen_t slen = sizeof(self), plen = sizeof(peer);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &slen) != 0) continue;  // not a socket
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) continue;  // not connected
    if (!sameAddress(local ? self : peer, want)) continue;
    int type = 0;
    socklen_t tlen = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) continue;
    netsocket::sizeSocketBuffers(fd, true);
    return true;
  }
  return false;
}

}  // namespace

bool overTcp(const Device& d) { return d.provider == "tcp" || d.provider.rfind("tcp;", 0) == 0; }

void sizeTcpSockets(Comm* comm) {
  if (comm->ep.dev == nullptr || !overTcp(*comm->ep.dev)) return;
  // The sender's socket connected to the listener's address (the peer's name); the receiver's
  // was accepted on its own address.
  unsigned char name[kMaxNameBytes];
  size_t len = sizeof(name);
  sockaddr_storage want{};
  const int rc =
      comm->isSend ? fi_av_lookup(comm->ep.av, comm->peer, name, &len) : fi_getname(&comm->ep.ep->fid, name, &len);
  if (rc != 0 || len > sizeof(name)) return;
  if (!asSockaddr(name, len, &want)) return;
  const bool sized = sizeSocketAt(want, !comm->isSend);
  CC_INFO(kSubsysNet, "net/ofi: the tcp socket of the connection %s %s %s", comm->isSend ? "to" : "from",
          comm->peerName.c_str(),
          sized ? "has the socket backend's buffer sizes" : "was not found (autotuned buffers)");
}

size_t ofiWholeSegmentBytes(int dev, size_t maxBytes, size_t align) {
  int count = 0;
  Device* d = nullptr;
  if (!isOk(ofiDevices(&count)) || dev < 0 || dev >= count || !isOk(deviceAt(dev, &d)) || !overTcp(*d)) return 0;
  const auto* src = static_cast<const sockaddr*>(d->info->src_addr);
  const bool ipv6 = src != nullptr && src->sa_family == AF_INET6;
  const bool timestamps = netsocket::sysctlInt("/proc/sys/net/ipv4/tcp_timestamps") != 0;
  const size_t unit = netsocket::tcpTransmitUnit(netsocket::interfaceMtu(d->props.name), ipv6, timestamps);
  return netsocket::wholeUnitsMessage(unit, kTcpTaggedHeaderBytes, maxBytes, align);
}

}  // namespace collcomm::detail::netofi
