// The OFI backend's handshake: listen, connect and accept over reliable datagrams (setup tier;
// none blocks).
//
// listen opens an endpoint and puts its address in the handle. connect opens an endpoint of its
// own, adds the listener to its address vector and sends a hello {magic, version, secret, key,
// its own address} to the listener's hello tag; the comm is returned as soon as the hello is
// posted (delivering it may need the listener's progress, which it gets only when its thread
// calls accept, perhaps after this thread's other connects). accept receives hellos, drops (and
// logs) any whose magic, version or secret is wrong or that does not parse, and turns the
// listener's endpoint into the receiving comm of the first good one: the sender's address goes
// into its address vector (for the farewell, goodbyes and probes) and the key names the tags
// of the connection's messages.
#include <sys/random.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"
#include "transport/net/net_ofi_wire.h"

namespace collcomm::detail::netofi {

struct ConnectState {
  Comm* comm = nullptr;
};

namespace {

struct ListenComm {
  Comm* comm = nullptr;  // the endpoint that becomes the receiving comm
  NetSecret secret{};
};

uint32_t newKey() {
  uint32_t k = 0;
  if (getrandom(&k, sizeof(k), 0) != static_cast<ssize_t>(sizeof(k)))
    k = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&k) ^ static_cast<uintptr_t>(getpid()) * 2654435761u);
  k &= kKeyMask;
  return k == 0 ? 1 : k;
}

// Opens a comm's endpoint on `dev` and registers the comm itself where the provider asks for it.
Status openComm(int dev, bool isSend, std::unique_ptr<Comm>* out) {
  Device* d = nullptr;
  CC_CHECK(deviceAt(dev, &d));
  auto comm = std::make_unique<Comm>();
  comm->isSend = isSend;
  CC_CHECK(openEndpoint(d, &comm->ep));
  if (comm->ep.needsMr) {
    const Status s = registerMr(&comm->ep, comm.get(), sizeof(Comm), NetMemType::kHost, &comm->selfMr);
    if (!isOk(s)) {
      closeEndpoint(&comm->ep);
      return s;
    }
    comm->ep.owned.push_back(comm->selfMr);
  }
  *out = std::move(comm);
  return kOk;
}

// Frees a comm that never started (no operation posted).
void discardComm(Comm* comm) {
  if (comm == nullptr) return;
  closeEndpoint(&comm->ep);
  delete comm;
}

void* selfDesc(Comm* comm) { return comm->selfMr != nullptr ? fi_mr_desc(comm->selfMr->mr) : nullptr; }

Status postHelloRecv(ListenComm* lc) {
  Comm* c = lc->comm;
  const ssize_t rc = fi_trecv(c->ep.ep, &c->hello, sizeof(Hello), selfDesc(c), FI_ADDR_UNSPEC, kHelloTag, 0,
                              &c->helloCtx);
  if (rc == -FI_EAGAIN) return kOk;
  if (rc != 0)
    return CC_ERROR(Status::kSystemError, "net/ofi: cannot post a receive for hellos on %s: %s", c->ep.name.c_str(),
                    fiError(static_cast<int>(rc)).c_str());
  c->helloPosted = true;
  return kOk;
}

// Why a hello of `len` bytes is not one to accept; null when it is.
const char* rejectHello(const ListenComm* lc, const Hello& h, size_t len) {
  if (len != sizeof(Hello) || h.magic != kHelloMagic || h.version != kWireVersion) return "its hello is not collcomm's";
  if (h.secret[0] != lc->secret.words[0] || h.secret[1] != lc->secret.words[1]) return "it presented another secret";
  if (h.key == 0 || h.key > kKeyMask || h.nameLen == 0 || h.nameLen > kMaxNameBytes)
    return "its hello describes an impossible connection";
  return nullptr;
}

}  // namespace

Status ofiListen(int dev, const NetSecret& secret, void* handle, void** listenComm) {
  auto lc = std::make_unique<ListenComm>();
  lc->secret = secret;
  std::unique_ptr<Comm> comm;
  CC_CHECK(openComm(dev, false, &comm));
  Handle h{};
  h.magic = kHandleMagic;
  size_t len = sizeof(h.name);
  Status s = endpointName(&comm->ep, h.name, &len);
  lc->comm = comm.release();
  if (isOk(s)) s = postHelloRecv(lc.get());
  if (!isOk(s)) {
    discardComm(lc->comm);
    return s;
  }
  h.nameLen = static_cast<uint16_t>(len);
  h.pending = nullptr;
  memset(handle, 0, kNetHandleBytes);
  memcpy(handle, &h, sizeof(h));
  *listenComm = lc.release();
  return kOk;
}

void ofiAbandonConnect(void* handle) {
  Handle* h = static_cast<Handle*>(handle);
  if (h->pending == nullptr) return;
  discardComm(h->pending->comm);
  delete h->pending;
  h->pending = nullptr;
}

Status ofiConnect(int dev, const NetSecret& secret, void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle* h = static_cast<Handle*>(handle);
  if (h->pending == nullptr) {
    if (h->magic != kHandleMagic || h->nameLen == 0 || h->nameLen > kMaxNameBytes)
      return CC_ERROR(Status::kInternalError, "net/ofi: connect with a bad handle");
    std::unique_ptr<Comm> comm;
    CC_CHECK(openComm(dev, true, &comm));
    auto cs = std::make_unique<ConnectState>();
    cs->comm = comm.release();
    h->pending = cs.release();
    Comm* c = h->pending->comm;
    Status s = insertPeer(&c->ep, h->name, &c->peer, &c->peerName);
    Hello& hl = c->hello;
    hl.magic = kHelloMagic;
    hl.version = kWireVersion;
    hl.secret[0] = secret.words[0];
    hl.secret[1] = secret.words[1];
    hl.key = newKey();
    c->key = hl.key;
    size_t len = sizeof(hl.name);
    if (isOk(s)) s = endpointName(&c->ep, hl.name, &len);
    hl.nameLen = static_cast<uint32_t>(len);
    if (isOk(s)) s = startComm(c);
    if (!isOk(s)) {
      ofiAbandonConnect(handle);
      return s;
    }
  }
  Comm* c = h->pending->comm;
  const ssize_t rc = fi_tsend(c->ep.ep, &c->hello, sizeof(Hello), selfDesc(c), c->peer, kHelloTag, &c->helloCtx);
  if (rc == -FI_EAGAIN) {
    const Status s = pollCq(c);
    if (!isOk(s)) ofiAbandonConnect(handle);
    return s;
  }
  if (rc != 0) {
    const std::string where = c->peerName;
    ofiAbandonConnect(handle);
    return CC_ERROR(Status::kRemoteError, "net/ofi: sending the hello to %s failed: %s", where.c_str(),
                    fiError(static_cast<int>(rc)).c_str());
  }
  c->helloPosted = true;
  *sendComm = c;
  delete h->pending;
  h->pending = nullptr;
  return kOk;
}

Status ofiAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  Comm* c = lc->comm;
  if (c == nullptr) return CC_ERROR(Status::kInternalError, "net/ofi: accept on a listener that already accepted");
  if (!c->helloPosted) CC_CHECK(postHelloRecv(lc));
  for (;;) {
    fi_cq_tagged_entry e;
    const ssize_t n = fi_cq_read(c->ep.cq, &e, 1);
    if (n == -FI_EAGAIN) return kOk;
    size_t len = 0;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (fi_cq_readerr(c->ep.cq, &err, 0) < 0) return kOk;
      if (err.op_context != &c->helloCtx) continue;
      len = err.len + err.olen;  // a truncated (too long) hello: dropped below
    } else if (n < 0) {
      return CC_ERROR(Status::kSystemError, "net/ofi: reading the completions of %s failed: %s", c->ep.name.c_str(),
                      fiError(static_cast<int>(n)).c_str());
    } else {
      if (e.op_context != &c->helloCtx) continue;
      len = e.len;
    }
    c->helloPosted = false;
    const char* drop = rejectHello(lc, c->hello, len);
    std::string from = "an unknown peer";
    if (drop == nullptr) {
      const Status s = insertPeer(&c->ep, c->hello.name, &c->peer, &c->peerName);
      if (!isOk(s)) drop = "its address could not be added to the address vector";
      else from = c->peerName;
    }
    if (drop != nullptr) {
      CC_WARN("net/ofi: dropped a connection from %s to %s: %s", from.c_str(), c->ep.name.c_str(), drop);
      CC_CHECK(postHelloRecv(lc));
      continue;
    }
    c->key = c->hello.key;
    CC_CHECK(startComm(c));
    lc->comm = nullptr;
    *recvComm = c;
    return kOk;
  }
}

Status ofiCloseListen(void* listenComm) {
  auto* lc = static_cast<ListenComm*>(listenComm);
  if (lc != nullptr) discardComm(lc->comm);
  delete lc;
  return kOk;
}

}  // namespace collcomm::detail::netofi
