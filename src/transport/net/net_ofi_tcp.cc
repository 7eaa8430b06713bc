// What the OFI backend does only over libfabric's tcp provider (alone, or under ofi_rxm), gated on
// the provider's name so that verbs, efa and shm never see it. Over tcp every message of a
// connection is the provider's header and the payload, one after the other on one TCP stream, as
// on the socket backend's control socket: so the same rule picks the Simple step that leaves in
// whole TCP segments (net.h wholeSegmentBytes; docs/net.md, "Steps in whole segments"), and the
// connections get larger Simple slots, as tcp's cost per message is high (net.h minSimpleSlotBytes).
// Setup tier.
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

// The Simple slot a NET connection over tcp gets at least: 1 MiB, 8x the default. libfabric 1.17's
// tcp provider costs far more per message than the socket backend (polls of the endpoint's sockets
// on every completion-queue read, the wait object's read and write per completion), so fewer,
// larger steps pay: a 16 MiB allreduce between 2 processes made a seventh of the sends and moved
// half again as much as with 128 KiB slots, under load (docs/lab/2026-11-27.md, "OFI/tcp: larger
// NET steps"). A step (whole segments, at most the slot) stays within rxm's eager limit
// (net_ofi_lib.cc, 1 MiB), so none waits for a rendezvous. It costs memory: a NET FIFO is 8 slots,
// 8 MiB instead of 1 MiB, on each side of each connection (COLLCOMM_BUFFSIZE, when set, keeps the
// size the user chose).
constexpr size_t kTcpMinSlotBytes = size_t{1} << 20;

// Device `dev` when its provider is tcp (alone or under rxm), else null.
const Device* tcpDevice(int dev) {
  int count = 0;
  Device* d = nullptr;
  if (!isOk(ofiDevices(&count)) || dev < 0 || dev >= count || !isOk(deviceAt(dev, &d)) || !overTcp(*d)) return nullptr;
  return d;
}

}  // namespace

bool overTcp(const Device& d) { return d.provider == "tcp" || d.provider.rfind("tcp;", 0) == 0; }

size_t ofiWholeSegmentBytes(int dev, size_t maxBytes, size_t align) {
  const Device* d = tcpDevice(dev);
  if (d == nullptr) return 0;
  const auto* src = static_cast<const sockaddr*>(d->info->src_addr);
  const bool ipv6 = src != nullptr && src->sa_family == AF_INET6;
  const bool timestamps = netsocket::sysctlInt("/proc/sys/net/ipv4/tcp_timestamps") != 0;
  const size_t unit = netsocket::tcpTransmitUnit(netsocket::interfaceMtu(d->props.name), ipv6, timestamps);
  return netsocket::wholeUnitsMessage(unit, kTcpTaggedHeaderBytes, maxBytes, align);
}

size_t ofiMinSimpleSlotBytes(int dev) { return tcpDevice(dev) != nullptr ? kTcpMinSlotBytes : 0; }

}  // namespace collcomm::detail::netofi
