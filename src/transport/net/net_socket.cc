// The built-in socket backend of the net interface (net.h) over TCP, IPv4 or IPv6.
//
// A connection is one control socket plus nThreads x nSocksPerThread data sockets, each data socket
// driven by one of nThreads helper threads of the connection. Every message starts with a header
// {tag, size} on the control socket; a message of up to kInlineBytes (or any message when there
// are no data sockets) follows on the control socket, moved by the caller's thread inside
// isend/irecv/test; a larger one is cut into at most nSocks chunks of at least kInlineBytes, dealt
// round-robin over the data sockets, and moved by the helper threads. Both sides cut and deal
// identically from the sizes in the headers, so every data socket carries its chunks in the same
// order on both ends.
//
// This file owns the ops table that ties the backend's files together (which file owns what:
// net_socket_internal.h).
//
// Tiers: connect/accept/close are setup tier; isend/irecv/test are the proxy's data path (no
// allocation; non-blocking syscalls on the control socket; a mutex per helper thread to hand it
// chunks).
#include <cstddef>

#include "common/status.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_internal.h"

namespace collcomm::detail {
namespace netsocket {
namespace {

Status socketRegMr(void*, void*, size_t, NetMemType type, void** mhandle) {
  if (type != NetMemType::kHost)
    return CC_ERROR(Status::kInternalError, "net/socket: only host memory can be registered");
  *mhandle = nullptr;
  return kOk;
}

Status socketDeregMr(void*, void*) { return kOk; }

Status socketCloseComm(void* c) {
  if (c != nullptr) destroyComm(static_cast<SocketComm*>(c));
  return kOk;
}

const NetOpsV1 kSocketNet = {
    .name = "Socket",
    .version = kNetInterfaceVersion,
    .init = socketInit,
    .devices = socketDevices,
    .getProperties = socketGetProperties,
    .listen = socketListen,
    .connect = socketConnect,
    .abandonConnect = socketAbandonConnect,
    .accept = socketAccept,
    .regMr = socketRegMr,
    .deregMr = socketDeregMr,
    .isend = socketIsend,
    .irecv = socketIrecv,
    .test = socketTest,
    .farewell = socketFarewell,
    .peerFarewell = socketPeerFarewell,
    .wholeSegmentBytes = socketWholeSegmentBytes,
    .closeSend = socketCloseComm,
    .closeRecv = socketCloseComm,
    .closeListen = socketCloseListen,
};

}  // namespace
}  // namespace netsocket

const NetOpsV1& socketNet() { return netsocket::kSocketNet; }

}  // namespace collcomm::detail
