// Private to the OFI (libfabric) backend (net_ofi*.cc, not part of net.h): the types its files
// share and the functions they call across files. Which file owns what:
//   net_ofi.cc           the ops table (and the backend's design, in its banner)
//   net_ofi_lib.cc       libfabric loaded with dlopen: the few real symbols the backend calls
//   net_ofi_device.cc    provider and interface choice, devices and their properties
//   net_ofi_endpoint.cc  a comm's libfabric objects (domain, endpoint, AV, CQ), memory registration
//   net_ofi_handshake.cc listen / connect / accept
//   net_ofi_progress.cc  requests, isend/irecv/test, control messages (farewell, goodbye, probes)
//   net_ofi_tcp.cc       what the backend does over libfabric's tcp provider only (whole-segment steps)
//   net_ofi_wire.h       what travels between the endpoints, and the tag layout
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/net/net.h"
#include "transport/net/net_ofi_wire.h"

namespace collcomm::detail::netofi {

// ---- libfabric (net_ofi_lib.cc)

// The real symbols of libfabric.so.1 the backend calls; every other fi_* call is a static inline
// over the objects' ops tables (no symbol). Loaded once per process, never unloaded.
struct Lib {
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
                 fi_info** info);
  void (*freeinfo)(fi_info* info);
  fi_info* (*dupinfo)(const fi_info* info);
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
  const char* (*strerror)(int errnum);
  uint32_t (*version)();
};

// The library, or null when it cannot be loaded (*why then says why, in a sentence).
const Lib* lib(std::string* why);
// The API version the backend asks fi_getinfo for.
uint32_t apiVersion();
// fi_strerror of a negative or positive libfabric error code.
std::string fiError(int err);

// ---- devices (net_ofi_device.cc)

struct Device {
  fi_info* info = nullptr;       // one provider's domain (owned; fi_dupinfo), used to open endpoints
  fid_fabric* fabric = nullptr;  // opened on first use, kept for the process
  NetProperties props{};
  std::string provider;
};

// The provider the devices come from, given the names of those fi_getinfo offered (in its order)
// and COLLCOMM_OFI_PROVIDER ("" when unset); "" when none will do (net_ofi_device.cc's banner).
std::string chooseProvider(const std::vector<std::string>& offered, const std::string& asked);
Status ofiInit();
Status ofiDevices(int* count);
Status ofiGetProperties(int dev, NetProperties* props);
// Device `dev` with its fabric open; a sentence when there is none. The device lives as long as
// the process (a later init with other settings makes new ones and keeps the old).
Status deviceAt(int dev, Device** out);

// ---- the tcp provider only (net_ofi_tcp.cc)

// Whether the device's provider is libfabric's tcp, alone or under ofi_rxm.
bool overTcp(const Device& d);
// net.h wholeSegmentBytes: over tcp, the largest step that leaves in whole TCP segments; else 0.
size_t ofiWholeSegmentBytes(int dev, size_t maxBytes, size_t align);

// ---- a comm's libfabric objects (net_ofi_endpoint.cc)

struct Mr {
  fid_mr* mr = nullptr;
  char* base = nullptr;
  size_t size = 0;
};

struct Endpoint {
  Device* dev = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  bool needsMr = false;    // the provider wants local buffers registered (FI_MR_LOCAL)
  std::string name;        // this endpoint's address, for sentences
  std::vector<Mr*> owned;  // registrations closed with the endpoint (after it, before the domain)
};

// Opens a domain, address vector, completion queue and endpoint on `dev` (setup tier).
Status openEndpoint(Device* dev, Endpoint* ep);
// Closes the endpoint (cancelling what is posted), then the registrations it owns, then the rest.
void closeEndpoint(Endpoint* ep);
// The endpoint's address as libfabric names it (fi_getname).
Status endpointName(Endpoint* ep, void* name, size_t* len);
// Inserts a peer's address; *addr for sends. *text: the address in words, for sentences.
Status insertPeer(Endpoint* ep, const void* name, fi_addr_t* addr, std::string* text);
Status registerMr(Endpoint* ep, void* data, size_t size, NetMemType type, Mr** out);
void deregisterMr(Endpoint* ep, Mr* mr);
// The descriptor a send or receive of [data, data+size) passes: the handle's where one is given;
// else, where the provider wants registered buffers, a registration made now that the caller
// releases (deregisterMr) when the operation is done (*made); else null.
Status descFor(Endpoint* ep, void* data, size_t size, Mr* given, void** desc, Mr** made);

// ---- requests and comms

using Clock = std::chrono::steady_clock;

struct Comm;

struct Request {
  fi_context2 ctx;  // first: libfabric hands this pointer back in completions (FI_CONTEXT2)
  Comm* comm = nullptr;
  bool used = false;
  bool done = false;
  size_t size = 0;  // send: bytes sent; recv: bytes that arrived
  size_t capacity = 0;
  uint32_t tag = 0;
  uint64_t seen = 0;     // the comm's epoch when this request was last tested (see ofiTest)
  Mr* autoMr = nullptr;  // a registration made for this operation alone (see descFor)
};

// A control message's buffer and context (farewell, goodbye, probe, and the control receive).
struct CtrlOp {
  fi_context2 ctx;
  bool posted = false;
  CtrlMsg msg{};
};

struct Comm {
  bool isSend = false;
  Endpoint ep;
  Mr* selfMr = nullptr;  // FI_MR_LOCAL providers: this struct (hello, control messages) registered
  fi_addr_t peer = FI_ADDR_UNSPEC;
  std::string peerName;  // the remote address, for sentences
  uint32_t key = 0;      // the connection's tag space (see net_ofi_wire.h)
  Request reqs[kNetMaxRequests];
  int inFlight = 0;
  uint64_t epoch = 1;  // completion queue reads so far (see ofiTest)
  bool failed = false;
  bool peerLeft = false;  // a goodbye came, or a control message found the peer gone
  int emptyPollsSinceLeft = 0;
  std::string leftWhy;
  bool haveFarewell = false;
  uint32_t farewellWord = 0;
  CtrlOp ctrlRecv;  // posted for the peer's control messages, reposted after each
  CtrlOp farewellOp;
  CtrlOp goodbyeOp;
  CtrlOp probeOp;
  fi_context2 helloCtx;  // send: the hello's send; listen: its receive
  Hello hello{};
  bool helloPosted = false;
  Clock::time_point lastProbe{};
  Clock::time_point probeRefusedSince{};  // the first of the probes refused in a row (see maybeProbe)
};

// ---- handshake (net_ofi_handshake.cc)

Status ofiListen(int dev, const NetSecret& secret, void* handle, void** listenComm);
Status ofiConnect(int dev, const NetSecret& secret, void* handle, void** sendComm);
void ofiAbandonConnect(void* handle);
Status ofiAccept(void* listenComm, void** recvComm);
Status ofiCloseListen(void* listenComm);

// ---- data path (net_ofi_progress.cc)

// A comm over an open endpoint whose peer is known: posts its control receive.
Status startComm(Comm* comm);
Status ofiIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request);
Status ofiIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                void** request);
Status ofiTest(void* request, bool* done, size_t* sizes);
Status ofiFarewell(void* recvComm, uint32_t word);
bool ofiPeerFarewell(void* sendComm, uint32_t* word);
// Says goodbye (briefly waiting for it to leave), then closes the endpoint and frees the comm.
void destroyComm(Comm* comm);
// Reads the comm's completion queue: requests done, control messages, errors.
Status pollCq(Comm* comm);

}  // namespace collcomm::detail::netofi
