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
// Handshake: the connecting side opens all sockets at once (non-blocking) and sends on each a
// hello {magic, version, secret, nonce, index, shape}; the listening side accepts, reads the
// hellos without blocking, drops any socket whose hello is wrong (secret, magic, another nonce)
// and returns the connection once the control and every data socket have arrived.
//
// Tiers: connect/accept/close are setup tier; isend/irecv/test are the proxy's data path (no
// allocation; non-blocking syscalls on the control socket; a mutex per helper thread to hand it
// chunks).
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "common/params.h"
#include "transport/net/net.h"

namespace collcomm::detail {
namespace {

constexpr uint32_t kHelloMagic = 0x43434e54;   // "CCNT"
constexpr uint32_t kHandleMagic = 0x43434e48;  // "CCNH"
constexpr uint32_t kWireVersion = 1;
constexpr size_t kInlineBytes = 64 << 10;
constexpr int kMaxThreads = 16;
constexpr int kMaxSocks = 64;
constexpr int kHelperPollMs = 10;

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  uint64_t nonce;
  uint32_t index;  // 0: control socket; 1..nSocks: data socket index+1
  uint16_t nThreads;
  uint16_t nSocksPerThread;
};

struct MsgHeader {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};

struct ConnectState;

struct Handle {
  uint32_t magic;
  uint32_t addrLen;
  uint8_t addr[28];
  ConnectState* pending;  // the connecting side's handshake in progress (its own copy only)
};
static_assert(sizeof(Handle) <= kNetHandleBytes);

struct Device {
  NetInterface iface;
  NetProperties props;
};

std::mutex g_devMu;
bool g_devInited = false;
std::vector<Device> g_devs;

int linkSpeedMbps(const std::string& ifname) {
  std::string path = "/sys/class/net/" + ifname + "/speed";
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  int speed = 0;
  if (fscanf(f, "%d", &speed) != 1 || speed < 0) speed = 0;
  fclose(f);
  return speed;
}

// ---- requests and connections

struct SocketComm;

struct Request {
  SocketComm* comm = nullptr;
  bool used = false;
  int stage = 0;  // 0: header (send) / unmatched (recv); 1: inline payload; 2: control part done
  char* data = nullptr;
  size_t capacity = 0;  // recv: buffer size
  size_t size = 0;      // bytes of the message
  uint32_t tag = 0;
  MsgHeader hdr{};
  size_t hdrDone = 0;
  size_t inlineDone = 0;
  std::atomic<int> pendingChunks{0};
  std::atomic<bool> chunkFailed{false};  // a helper could not move one of its chunks
};

struct Chunk {
  char* ptr;
  size_t size;
  size_t done;
  Request* req;
};

// One helper thread and the data sockets it drives.
struct Helper {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  int firstSock = 0;
  int nSocks = 0;
  std::vector<std::deque<Chunk>> queues;  // per owned socket
};

struct SocketComm {
  bool isSend = false;
  Socket ctrl;
  std::vector<Socket> data;
  std::vector<std::unique_ptr<Helper>> helpers;
  int nSocksPerThread = 0;
  std::string peer;  // remote address, for sentences
  Request reqs[kNetMaxRequests];
  std::deque<Request*> order;  // posted and not yet reported done, in posting order
  uint64_t nextSock = 0;       // round-robin position for the next chunked message
  std::atomic<int> ioError{0};  // helper threads: errno (or -1 for EOF) of the first failure
  bool failed = false;
  std::string failure;
  // recv: the header being read and the request whose inline payload is being read
  MsgHeader inHdr{};
  size_t inHdrDone = 0;
  Request* inReq = nullptr;
};

void helperLoop(SocketComm* comm, Helper* h) {
  std::vector<Chunk*> fronts(h->nSocks);
  std::vector<pollfd> pfds;
  pfds.reserve(h->nSocks);
  for (;;) {
    bool any = false;
    {
      std::unique_lock<std::mutex> lock(h->mu);
      h->cv.wait(lock, [&] {
        if (h->stop) return true;
        for (auto& q : h->queues)
          if (!q.empty()) return true;
        return false;
      });
      if (h->stop) return;
      for (int s = 0; s < h->nSocks; ++s) {
        fronts[s] = h->queues[s].empty() ? nullptr : &h->queues[s].front();
        any |= fronts[s] != nullptr;
      }
    }
    if (!any) continue;
    bool progressed = false;
    pfds.clear();
    for (int s = 0; s < h->nSocks; ++s) {
      Chunk* c = fronts[s];
      if (c == nullptr) continue;
      const Socket& sock = comm->data[h->firstSock + s];
      const size_t before = c->done;
      IoStatus st = comm->isSend ? sock.sendSome(c->ptr, c->size, &c->done) : sock.recvSome(c->ptr, c->size, &c->done);
      if (!st.ok()) {
        int expected = 0;
        comm->ioError.compare_exchange_strong(expected, st.err != 0 ? st.err : -1);
        c->req->chunkFailed.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
        c->done = c->size;  // the comm has failed; finish the chunk so nothing waits on it
      }
      progressed |= c->done != before;
      if (c->done == c->size) {
        Request* r = c->req;
        {
          std::lock_guard<std::mutex> lock(h->mu);
          h->queues[s].pop_front();
        }
        r->pendingChunks.fetch_sub(1, std::memory_order_release);
      } else {
        pfds.push_back(pollfd{sock.fd(), static_cast<short>(comm->isSend ? POLLOUT : POLLIN), 0});
      }
    }
    if (!progressed && !pfds.empty()) poll(pfds.data(), pfds.size(), kHelperPollMs);
  }
}

void startHelpers(SocketComm* comm, int nThreads, int nSocksPerThread) {
  comm->nSocksPerThread = nSocksPerThread;
  for (int t = 0; t < nThreads; ++t) {
    auto h = std::make_unique<Helper>();
    h->firstSock = t * nSocksPerThread;
    h->nSocks = nSocksPerThread;
    h->queues.resize(nSocksPerThread);
    comm->helpers.push_back(std::move(h));
  }
  for (auto& h : comm->helpers) h->thread = std::thread(helperLoop, comm, h.get());
}

void destroyComm(SocketComm* comm) {
  for (auto& h : comm->helpers) {
    {
      std::lock_guard<std::mutex> lock(h->mu);
      h->stop = true;
    }
    h->cv.notify_all();
  }
  for (auto& h : comm->helpers) h->thread.join();
  delete comm;
}

Status failComm(SocketComm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    comm->failure = what;
    return CC_ERROR(Status::kRemoteError, "net/socket: connection %s %s: %s", comm->isSend ? "to" : "from",
                    comm->peer.c_str(), what.c_str());
  }
  return Status::kRemoteError;
}

Status failIo(SocketComm* comm, const IoStatus& st) {
  if (st.code == IoCode::kClosed) return failComm(comm, "the peer closed the connection (" + st.describe() + ")");
  return failComm(comm, st.describe());
}

// Cuts a message into chunks over the data sockets (the same way on both sides).
void postChunks(SocketComm* comm, Request* r) {
  const size_t nSocks = comm->data.size();
  size_t chunk = std::max(kInlineBytes, (r->size + nSocks - 1) / nSocks);
  chunk = (chunk + 63) / 64 * 64;
  const int nChunks = static_cast<int>((r->size + chunk - 1) / chunk);
  r->pendingChunks.store(nChunks, std::memory_order_relaxed);
  for (int i = 0; i < nChunks; ++i) {
    const size_t off = static_cast<size_t>(i) * chunk;
    const int sock = static_cast<int>((comm->nextSock + i) % nSocks);
    Helper& h = *comm->helpers[sock / comm->nSocksPerThread];
    {
      std::lock_guard<std::mutex> lock(h.mu);
      h.queues[sock - h.firstSock].push_back(Chunk{r->data + off, std::min(chunk, r->size - off), 0, r});
    }
    h.cv.notify_one();
  }
  comm->nextSock += static_cast<uint64_t>(nChunks);
}

bool chunked(const SocketComm* comm, size_t size) { return !comm->data.empty() && size > kInlineBytes; }

Status progressSend(SocketComm* comm) {
  for (Request* r : comm->order) {
    if (r->stage == 0) {
      IoStatus st = comm->ctrl.sendSome(&r->hdr, sizeof(r->hdr), &r->hdrDone);
      if (!st.ok()) return failIo(comm, st);
      if (r->hdrDone < sizeof(r->hdr)) return kOk;
      if (chunked(comm, r->size)) {
        postChunks(comm, r);
        r->stage = 2;
      } else {
        r->stage = 1;
      }
    }
    if (r->stage == 1) {
      IoStatus st = comm->ctrl.sendSome(r->data, r->size, &r->inlineDone);
      if (!st.ok()) return failIo(comm, st);
      if (r->inlineDone < r->size) return kOk;
      r->stage = 2;
    }
  }
  return kOk;
}

Status progressRecv(SocketComm* comm) {
  for (;;) {
    if (comm->inReq == nullptr) {
      if (comm->inHdrDone < sizeof(MsgHeader)) {
        IoStatus st = comm->ctrl.recvSome(&comm->inHdr, sizeof(MsgHeader), &comm->inHdrDone);
        if (!st.ok()) return failIo(comm, st);
        if (comm->inHdrDone < sizeof(MsgHeader)) return kOk;
      }
      Request* m = nullptr;
      for (Request* r : comm->order)
        if (r->stage == 0 && r->tag == comm->inHdr.tag) {
          m = r;
          break;
        }
      if (m == nullptr) return kOk;  // waits for a matching irecv
      if (comm->inHdr.size > m->capacity)
        return failComm(comm, "a message of " + std::to_string(comm->inHdr.size) + " bytes arrived for a buffer of " +
                                  std::to_string(m->capacity) + " bytes (tag " + std::to_string(m->tag) + ")");
      m->size = comm->inHdr.size;
      if (chunked(comm, m->size)) {
        postChunks(comm, m);
        m->stage = 2;
        comm->inHdrDone = 0;
        continue;
      }
      m->stage = 1;
      comm->inReq = m;
    }
    Request* r = comm->inReq;
    IoStatus st = comm->ctrl.recvSome(r->data, r->size, &r->inlineDone);
    if (!st.ok()) return failIo(comm, st);
    if (r->inlineDone < r->size) return kOk;
    r->stage = 2;
    comm->inReq = nullptr;
    comm->inHdrDone = 0;
  }
}

Status progress(SocketComm* comm) {
  if (comm->failed) return Status::kRemoteError;
  if (const int err = comm->ioError.load(std::memory_order_acquire); err != 0)
    return failComm(comm, err < 0 ? std::string("the peer closed a data connection")
                                  : std::string("data socket: ") + strerror(err));
  return comm->isSend ? progressSend(comm) : progressRecv(comm);
}

Request* newRequest(SocketComm* comm) {
  if (comm->order.size() >= static_cast<size_t>(kNetMaxRequests)) return nullptr;
  for (Request& r : comm->reqs) {
    if (r.used) continue;
    r.used = true;
    r.comm = comm;
    r.stage = 0;
    r.hdrDone = 0;
    r.inlineDone = 0;
    r.pendingChunks.store(0, std::memory_order_relaxed);
    comm->order.push_back(&r);
    return &r;
  }
  return nullptr;
}

// ---- handshake

struct ConnectState {
  SocketAddress addr;
  std::vector<Socket> socks;
  std::vector<int> stage;  // 0 connecting, 1 sending hello, 2 done
  std::vector<size_t> helloDone;
  std::vector<Hello> hellos;
  int nThreads = 0;
  int nSocksPerThread = 0;
};

struct ListenComm {
  Socket listener;
  SocketAddress addr;
  NetSecret secret{};
  struct Pending {
    Socket sock;
    Hello hello{};
    size_t done = 0;
    std::string from;
  };
  std::vector<Pending> pending;
  bool haveNonce = false;
  uint64_t nonce = 0;
  int nThreads = -1;
  int nSocksPerThread = -1;
  Socket ctrl;
  std::vector<Socket> data;
};

// ---- ops

Status socketInit() {
  std::lock_guard<std::mutex> lock(g_devMu);
  if (g_devInited) return kOk;
  std::vector<NetInterface> ifs;
  CC_CHECK(findInterfaces(16, &ifs));
  for (const NetInterface& ni : ifs) {
    Device d;
    d.iface = ni;
    d.props = NetProperties{};
    snprintf(d.props.name, sizeof(d.props.name), "%s", ni.name.c_str());
    snprintf(d.props.address, sizeof(d.props.address), "%s", ni.addr.hostString().c_str());
    d.props.speedMbps = linkSpeedMbps(ni.name);
    d.props.latencyUs = 0;
    d.props.maxComms = 65536;
    d.props.maxRecvs = 1;
    d.props.maxMessageBytes = 1ull << 40;
    d.props.supportsDeviceMemory = false;
    g_devs.push_back(d);
    CC_INFO(kSubsysNet, "net/socket: device %zu is %s %s, speed %d Mb/s", g_devs.size() - 1, ni.name.c_str(),
            ni.addr.hostString().c_str(), d.props.speedMbps);
  }
  g_devInited = true;
  return kOk;
}

Status socketDevices(int* count) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  *count = static_cast<int>(g_devs.size());
  return kOk;
}

Status deviceAt(int dev, Device* out) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  if (dev < 0 || dev >= static_cast<int>(g_devs.size()))
    return CC_ERROR(Status::kInternalError, "net/socket: no device %d (there are %zu)", dev, g_devs.size());
  *out = g_devs[dev];
  return kOk;
}

Status socketGetProperties(int dev, NetProperties* props) {
  Device d;
  CC_CHECK(deviceAt(dev, &d));
  *props = d.props;
  return kOk;
}

Status socketListen(int dev, const NetSecret& secret, void* handle, void** listenComm) {
  Device d;
  CC_CHECK(deviceAt(dev, &d));
  auto lc = std::make_unique<ListenComm>();
  IoStatus st = Socket::listen(d.iface.addr, &lc->listener, &lc->addr);
  if (!st.ok())
    return CC_ERROR(Status::kSystemError, "net/socket: cannot listen on %s (%s): %s", d.iface.name.c_str(),
                    d.iface.addr.hostString().c_str(), st.describe().c_str());
  lc->secret = secret;
  Handle h{};
  h.magic = kHandleMagic;
  h.addrLen = lc->addr.len();
  memcpy(h.addr, lc->addr.sa(), lc->addr.len());
  h.pending = nullptr;
  memset(handle, 0, kNetHandleBytes);
  memcpy(handle, &h, sizeof(h));
  *listenComm = lc.release();
  return kOk;
}

void socketAbandonConnect(void* handle) {
  Handle* h = static_cast<Handle*>(handle);
  delete h->pending;
  h->pending = nullptr;
}

Status socketConnect(int dev, const NetSecret& secret, void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle* h = static_cast<Handle*>(handle);
  if (h->pending == nullptr) {
    if (h->magic != kHandleMagic) return CC_ERROR(Status::kInternalError, "net/socket: connect with a bad handle");
    Device d;
    CC_CHECK(deviceAt(dev, &d));
    auto cs = std::make_unique<ConnectState>();
    if (!SocketAddress::fromSockaddr(h->addr, h->addrLen, &cs->addr))
      return CC_ERROR(Status::kInternalError, "net/socket: connect handle holds no valid address");
    socketThreadsAndSockets(d.props.speedMbps, &cs->nThreads, &cs->nSocksPerThread);
    const int nSocks = cs->nThreads * cs->nSocksPerThread;
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce)))
      nonce = reinterpret_cast<uintptr_t>(cs.get()) ^ static_cast<uint64_t>(getpid());
    for (int i = 0; i <= nSocks; ++i) {
      Socket s(::socket(cs->addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!s.valid()) return CC_ERROR(Status::kSystemError, "net/socket: socket() failed: %s", strerror(errno));
      if (::connect(s.fd(), cs->addr.sa(), cs->addr.len()) != 0 && errno != EINPROGRESS && errno != EINTR)
        return CC_ERROR(Status::kRemoteError, "net/socket: connect to %s failed: %s", cs->addr.toString().c_str(),
                        strerror(errno));
      int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      cs->socks.push_back(std::move(s));
      cs->stage.push_back(0);
      cs->helloDone.push_back(0);
      Hello hello{kHelloMagic, kWireVersion, {secret.words[0], secret.words[1]}, nonce, static_cast<uint32_t>(i),
                  static_cast<uint16_t>(cs->nThreads), static_cast<uint16_t>(cs->nSocksPerThread)};
      cs->hellos.push_back(hello);
    }
    h->pending = cs.release();
  }
  ConnectState* cs = h->pending;
  bool all = true;
  for (size_t i = 0; i < cs->socks.size(); ++i) {
    if (cs->stage[i] == 0) {
      pollfd p{cs->socks[i].fd(), POLLOUT, 0};
      if (poll(&p, 1, 0) <= 0) {
        all = false;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(cs->socks[i].fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        std::string where = cs->addr.toString();
        socketAbandonConnect(handle);
        return CC_ERROR(Status::kRemoteError, "net/socket: connect to %s failed: %s", where.c_str(), strerror(err));
      }
      cs->stage[i] = 1;
    }
    if (cs->stage[i] == 1) {
      IoStatus st = cs->socks[i].sendSome(&cs->hellos[i], sizeof(Hello), &cs->helloDone[i]);
      if (!st.ok()) {
        std::string where = cs->addr.toString();
        socketAbandonConnect(handle);
        return CC_ERROR(Status::kRemoteError, "net/socket: sending the hello to %s failed: %s", where.c_str(),
                        st.describe().c_str());
      }
      if (cs->helloDone[i] == sizeof(Hello)) cs->stage[i] = 2;
    }
    all &= cs->stage[i] == 2;
  }
  if (!all) return kOk;
  auto comm = new SocketComm();
  comm->isSend = true;
  comm->peer = cs->addr.toString();
  comm->ctrl = std::move(cs->socks[0]);
  for (size_t i = 1; i < cs->socks.size(); ++i) comm->data.push_back(std::move(cs->socks[i]));
  startHelpers(comm, cs->socks.size() > 1 ? cs->nThreads : 0, cs->nSocksPerThread);
  socketAbandonConnect(handle);
  *sendComm = comm;
  return kOk;
}

Status socketAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  for (;;) {
    Socket s;
    SocketAddress from;
    IoStatus st = lc->listener.tryAccept(&s, &from);
    if (!st.ok())
      return CC_ERROR(Status::kSystemError, "net/socket: accept on %s failed: %s", lc->addr.toString().c_str(),
                      st.describe().c_str());
    if (!s.valid()) break;
    ListenComm::Pending p;
    p.sock = std::move(s);
    p.from = from.toString();
    lc->pending.push_back(std::move(p));
  }
  for (size_t i = 0; i < lc->pending.size();) {
    ListenComm::Pending& p = lc->pending[i];
    IoStatus st = p.sock.recvSome(&p.hello, sizeof(Hello), &p.done);
    const char* drop = nullptr;
    if (!st.ok()) drop = "it closed before its hello";
    else if (p.done < sizeof(Hello)) {
      ++i;
      continue;
    }
    const Hello& hl = p.hello;
    if (drop == nullptr && (hl.magic != kHelloMagic || hl.version != kWireVersion)) drop = "its hello is not collcomm's";
    if (drop == nullptr && !(hl.secret[0] == lc->secret.words[0] && hl.secret[1] == lc->secret.words[1]))
      drop = "it presented another secret";
    const int nSocks = hl.nThreads * hl.nSocksPerThread;
    if (drop == nullptr && (hl.nThreads > kMaxThreads || nSocks > kMaxSocks || static_cast<int>(hl.index) > nSocks))
      drop = "its hello describes an impossible connection";
    if (drop == nullptr && lc->haveNonce &&
        (hl.nonce != lc->nonce || hl.nThreads != lc->nThreads || hl.nSocksPerThread != lc->nSocksPerThread))
      drop = "it belongs to another connection";
    if (drop == nullptr) {
      if (!lc->haveNonce) {
        lc->haveNonce = true;
        lc->nonce = hl.nonce;
        lc->nThreads = hl.nThreads;
        lc->nSocksPerThread = hl.nSocksPerThread;
        lc->data.resize(nSocks);
      }
      Socket& slot = hl.index == 0 ? lc->ctrl : lc->data[hl.index - 1];
      if (slot.valid()) drop = "it repeats a socket of the connection";
      else slot = std::move(p.sock);
    }
    if (drop != nullptr)
      CC_WARN("net/socket: dropped a connection from %s to %s: %s", p.from.c_str(), lc->addr.toString().c_str(), drop);
    lc->pending.erase(lc->pending.begin() + static_cast<long>(i));
  }
  if (!lc->haveNonce || !lc->ctrl.valid()) return kOk;
  for (const Socket& s : lc->data)
    if (!s.valid()) return kOk;
  auto comm = new SocketComm();
  comm->isSend = false;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  SocketAddress peer;
  if (getpeername(lc->ctrl.fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
      SocketAddress::fromSockaddr(&ss, len, &peer))
    comm->peer = peer.toString();
  comm->ctrl = std::move(lc->ctrl);
  comm->data = std::move(lc->data);
  startHelpers(comm, comm->data.empty() ? 0 : lc->nThreads, lc->nSocksPerThread);
  lc->haveNonce = false;
  lc->data.clear();
  *recvComm = comm;
  return kOk;
}

Status socketRegMr(void*, void*, size_t, NetMemType type, void** mhandle) {
  if (type != NetMemType::kHost)
    return CC_ERROR(Status::kInternalError, "net/socket: only host memory can be registered");
  *mhandle = nullptr;
  return kOk;
}

Status socketDeregMr(void*, void*) { return kOk; }

Status socketIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void*, void** request) {
  auto* comm = static_cast<SocketComm*>(sendComm);
  *request = nullptr;
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(const_cast<void*>(data));
  r->size = size;
  r->tag = tag;
  r->hdr = MsgHeader{tag, 0, size};
  *request = r;
  return progress(comm);
}

Status socketIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void**,
                   void** request) {
  auto* comm = static_cast<SocketComm*>(recvComm);
  *request = nullptr;
  if (n != 1) return CC_ERROR(Status::kInternalError, "net/socket: irecv takes one buffer, not %d", n);
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(data[0]);
  r->capacity = sizes[0];
  r->tag = tags[0];
  *request = r;
  return progress(comm);
}

Status socketTest(void* request, bool* done, size_t* sizes) {
  auto* r = static_cast<Request*>(request);
  SocketComm* comm = r->comm;
  *done = false;
  // A request that completed is reported even if the stream broke after it (the peer closed
  // right after its last message): the caller lands what arrived before it learns of the break.
  const Status s = progress(comm);
  if (r->stage != 2 || r->pendingChunks.load(std::memory_order_acquire) != 0) return s;
  if (r->chunkFailed.load(std::memory_order_relaxed)) return progress(comm);
  *done = true;
  if (sizes != nullptr) sizes[0] = r->size;
  for (auto it = comm->order.begin(); it != comm->order.end(); ++it)
    if (*it == r) {
      comm->order.erase(it);
      break;
    }
  r->used = false;
  return kOk;
}

Status socketCloseComm(void* c) {
  if (c != nullptr) destroyComm(static_cast<SocketComm*>(c));
  return kOk;
}

Status socketCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
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
    .closeSend = socketCloseComm,
    .closeRecv = socketCloseComm,
    .closeListen = socketCloseListen,
};

}  // namespace

const NetOpsV1& socketNet() { return kSocketNet; }

void socketThreadsAndSockets(int speedMbps, int* nThreads, int* nSocksPerThread) {
  // Auto: one helper thread with two sockets up to 25 Gb/s (and when the speed is unknown, as on
  // loopback); more threads for faster links, where one core cannot keep a socket busy.
  int t = speedMbps >= 100000 ? 4 : speedMbps >= 25000 ? 2 : 1;
  int s = 2;
  const int64_t userT = paramInt(Param::kSocketNthreads), userS = paramInt(Param::kNsocksPerthread);
  if (userT >= 0) t = static_cast<int>(std::min<int64_t>(userT, kMaxThreads));
  if (userS > 0) s = static_cast<int>(std::min<int64_t>(userS, kMaxSocks));
  if (t * s > kMaxSocks) s = kMaxSocks / t;
  *nThreads = t;
  *nSocksPerThread = t == 0 ? 0 : s;
}

}  // namespace collcomm::detail
