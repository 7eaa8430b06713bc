// The OFI backend of the net interface (net.h): libfabric's reliable-datagram endpoints with
// tagged messages, so that one code path runs over the tcp and shm providers (tested here) and
// over verbs (InfiniBand, RoCE) and efa on clusters. COLLCOMM_NET=ofi selects it
// (net_select.cc); libfabric is loaded at run time (net_ofi_lib.cc).
//
// A connection is a pair of endpoints, each with its own domain, address vector and completion
// queue (net_ofi_endpoint.cc says why): the listener's endpoint becomes the receiving comm, the
// connecting side opens one for the sending comm. After the hello (net_ofi_handshake.cc) every
// message of the connection is one tagged send whose tag holds the connection's key and the
// caller's tag (net_ofi_wire.h); the provider's send-after-send ordering (required of every
// provider chosen) keeps the messages of a comm in posting order, and libfabric matches a message
// to the earliest posted receive with its tag, as the contract asks. The provider moves the data
// (eagerly, or by rendezvous for large messages); there are no helper threads of our own.
// Control messages (farewell, goodbye, probes) share the connection on their own tag
// (net_ofi_progress.cc).
//
// This file owns the ops table that ties the backend's files together (which file owns what:
// net_ofi_internal.h).
#include <cstddef>

#include "common/status.h"
#include "transport/net/net.h"
#include "transport/net/net_ofi_internal.h"

namespace collcomm::detail {
namespace netofi {
namespace {

// Registers only what the provider needs registered (host memory where it asks for FI_MR_LOCAL,
// device memory always); elsewhere the handle is null and sends pass no descriptor.
Status ofiRegMr(void* c, void* data, size_t size, NetMemType type, void** mhandle) {
  auto* comm = static_cast<Comm*>(c);
  *mhandle = nullptr;
  if (type == NetMemType::kHost && !comm->ep.needsMr) return kOk;
  Mr* m = nullptr;
  CC_CHECK(registerMr(&comm->ep, data, size, type, &m));
  *mhandle = m;
  return kOk;
}

Status ofiDeregMr(void* c, void* mhandle) {
  deregisterMr(&static_cast<Comm*>(c)->ep, static_cast<Mr*>(mhandle));
  return kOk;
}

Status ofiCloseComm(void* c) {
  destroyComm(static_cast<Comm*>(c));
  return kOk;
}

const NetOpsV1 kOfiNet = {
    .name = "OFI",
    .version = kNetInterfaceVersion,
    .init = ofiInit,
    .devices = ofiDevices,
    .getProperties = ofiGetProperties,
    .listen = ofiListen,
    .connect = ofiConnect,
    .abandonConnect = ofiAbandonConnect,
    .accept = ofiAccept,
    .regMr = ofiRegMr,
    .deregMr = ofiDeregMr,
    .isend = ofiIsend,
    .irecv = ofiIrecv,
    .test = ofiTest,
    .farewell = ofiFarewell,
    .peerFarewell = ofiPeerFarewell,
    .wholeSegmentBytes = ofiWholeSegmentBytes,
    .closeSend = ofiCloseComm,
    .closeRecv = ofiCloseComm,
    .closeListen = ofiCloseListen,
};

}  // namespace
}  // namespace netofi

const NetOpsV1& ofiNet() { return netofi::kOfiNet; }

}  // namespace collcomm::detail
