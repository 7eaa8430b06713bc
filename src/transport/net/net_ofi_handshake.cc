// The OFI backend's handshake: listen, connect and accept over reliable datagrams (setup tier;
// none blocks).
//
// listen opens an endpoint and puts its address in the handle. connect opens an endpoint of its
// own, adds the listener to its address vector and sends a hello {magic, version, secret, key,
// its own address} to the listener's hello tag; the comm is returned as soon as the hello is
// posted (delivering it may need the listener's progress, which it gets only when its thread
// calls accept, perhaps after this thread's other connects; the listener thread below gives it
// that progress meanwhile). accept receives hellos, drops (and
// logs) any whose magic, version or secret is wrong or that does not parse, and turns the
// listener's endpoint into the receiving comm of the first good one: the sender's address goes
// into its address vector (for the farewell, goodbyes and probes) and the key names the tags
// of the connection's messages.
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"
#include "transport/net/net_ofi_wire.h"

namespace collcomm::detail::netofi {

struct ConnectState {
  Comm* comm = nullptr;
};

namespace {

struct ListenComm {
  std::mutex mu;          // the owner's accept and the listener thread take turns on the endpoint
  Comm* comm = nullptr;   // the endpoint that becomes the receiving comm
  Comm* ready = nullptr;  // accepted by the listener thread, for the next accept to return
  std::string error;      // a failure the listener thread found, for the next accept to report
  NetSecret secret{};
};

// The listener thread: progresses the endpoints of listeners not yet accepted. A provider may
// need the listening side's progress before a connecting side can even post its hello (rxm sets
// up its connection in its progress calls), while the listening rank's thread is still busy
// connecting to its own peers; the NET transport connects before it accepts. Setup tier: it runs
// only while a listener is pending and looks at each about once a millisecond.
// Never destroyed: the detached thread waits on the condition variable until the process ends,
// and destroying a condition variable with a waiter blocks (at exit, for ever).
struct ListenThreadState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ListenComm*> pending;  // under mu
  bool started = false;              // under mu
};
ListenThreadState& listenState() {
  static ListenThreadState* s = new ListenThreadState();
  return *s;
}

Status pumpListener(ListenComm* lc);

void listenThread() {
  ListenThreadState& st = listenState();
  std::unique_lock<std::mutex> lock(st.mu);
  for (;;) {
    st.cv.wait(lock, [&] { return !st.pending.empty(); });
    for (ListenComm* lc : st.pending) {
      std::unique_lock<std::mutex> l(lc->mu, std::try_to_lock);
      if (!l.owns_lock() || lc->comm == nullptr || lc->ready != nullptr || !lc->error.empty()) continue;
      clearThreadLastError();
      if (!isOk(pumpListener(lc))) lc->error = threadLastError();
    }
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
  }
}

void addPendingListen(ListenComm* lc) {
  ListenThreadState& st = listenState();
  std::lock_guard<std::mutex> lock(st.mu);
  st.pending.push_back(lc);
  if (!st.started) {
    st.started = true;
    std::thread(listenThread).detach();  // lives as long as the process; sleeps when nothing is pending
  }
  st.cv.notify_all();
}

void removePendingListen(ListenComm* lc) {
  ListenThreadState& st = listenState();
  std::lock_guard<std::mutex> lock(st.mu);
  for (auto it = st.pending.begin(); it != st.pending.end(); ++it)
    if (*it == lc) {
      st.pending.erase(it);
      break;
    }
}

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
  const ssize_t rc =
      fi_trecv(c->ep.ep, &c->hello, sizeof(Hello), selfDesc(c), FI_ADDR_UNSPEC, kHelloTag, 0, &c->helloCtx);
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
  addPendingListen(lc.get());
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

namespace {

// Reads the listener's completions: drops bad hellos, and on a good one makes lc->comm the
// receiving comm and moves it to lc->ready. Caller holds lc->mu.
Status pumpListener(ListenComm* lc) {
  Comm* c = lc->comm;
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
      if (!isOk(s))
        drop = "its address could not be added to the address vector";
      else
        from = c->peerName;
    }
    if (drop != nullptr) {
      CC_WARN("net/ofi: dropped a connection from %s to %s: %s", from.c_str(), c->ep.name.c_str(), drop);
      CC_CHECK(postHelloRecv(lc));
      continue;
    }
    c->key = c->hello.key;
    CC_CHECK(startComm(c));
    lc->comm = nullptr;
    lc->ready = c;
    return kOk;
  }
}

}  // namespace

Status ofiAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  std::unique_lock<std::mutex> lock(lc->mu);
  if (!lc->error.empty()) return CC_ERROR(Status::kSystemError, "%s", lc->error.c_str());
  if (lc->ready == nullptr) {
    if (lc->comm == nullptr)
      return CC_ERROR(Status::kInternalError, "net/ofi: accept on a listener that already accepted");
    CC_CHECK(pumpListener(lc));
  }
  if (lc->ready == nullptr) return kOk;
  *recvComm = lc->ready;
  lc->ready = nullptr;
  lock.unlock();
  removePendingListen(lc);
  return kOk;
}

Status ofiCloseListen(void* listenComm) {
  auto* lc = static_cast<ListenComm*>(listenComm);
  if (lc == nullptr) return kOk;
  removePendingListen(lc);  // the listener thread is not in it once this returns
  discardComm(lc->comm);
  if (lc->ready != nullptr) destroyComm(lc->ready);
  delete lc;
  return kOk;
}

}  // namespace collcomm::detail::netofi
