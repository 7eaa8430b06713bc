// What the OFI backend does only over libfabric's tcp provider (alone, or under ofi_rxm), gated on
// the provider's name so that verbs, efa and shm never see it. Over tcp every message of a
// connection is the provider's header and the payload, one after the other on one TCP stream, as
// on the socket backend's control socket: so the same rule picks the Simple step that leaves in
// whole TCP segments (net.h wholeSegmentBytes; docs/net.md, "Whole segments over tcp"). Setup tier.
#include <sys/socket.h>

#include <string>

#include "transport/net/net_ofi_internal.h"
#include "transport/net/net_socket_internal.h"

namespace collcomm::detail::netofi {
namespace {

// What precedes a tagged message on a tcp connection: the provider's header, 16 bytes of base
// header and the 8-byte tag (struct tcpx_tag_hdr in libfabric 1.17, xnet_tag_hdr from 1.18). rxm
// hands tagged messages to tcp as they are (its dynamic receive buffers, on by default) and adds
// no header of its own.
constexpr size_t kTcpTaggedHeaderBytes = 24;

}  // namespace

bool overTcp(const Device& d) { return d.provider == "tcp" || d.provider.rfind("tcp;", 0) == 0; }

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
