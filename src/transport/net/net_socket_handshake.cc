// The socket backend's handshake: listen, connect and accept (setup tier; none blocks).
//
// Handshake: the connecting side opens all sockets at once (non-blocking) and sends on each a
// hello {magic, version, secret, nonce, index, shape}; the listening side accepts, reads the
// hellos without blocking, drops any socket whose hello is wrong (secret, magic, another nonce)
// and returns the connection once the control and every data socket have arrived.
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_internal.h"
#include "transport/net/net_socket_wire.h"

namespace collcomm::detail::netsocket {

struct ConnectState {
  SocketAddress addr;
  std::vector<Socket> socks;
  std::vector<int> stage;  // 0 connecting, 1 sending hello, 2 done
  std::vector<size_t> helloDone;
  std::vector<Hello> hellos;
  int nThreads = 0;
  int nSocksPerThread = 0;
};

namespace {

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

}  // namespace

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
    socketThreadsAndSockets(d.props.speedMbps, processCpus(), &cs->nThreads, &cs->nSocksPerThread);
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
  std::vector<Socket> data;
  for (size_t i = 1; i < cs->socks.size(); ++i) data.push_back(std::move(cs->socks[i]));
  SocketComm* comm = newComm(true, std::move(cs->socks[0]), std::move(data), cs->addr.toString());
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
    // In 64 bits: a stranger's hello may hold any two 16-bit counts.
    const int64_t nSocks = int64_t{hl.nThreads} * hl.nSocksPerThread;
    if (drop == nullptr && (hl.nThreads > kMaxThreads || nSocks > kMaxSocks || int64_t{hl.index} > nSocks))
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
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  SocketAddress peer;
  std::string peerName;
  if (getpeername(lc->ctrl.fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
      SocketAddress::fromSockaddr(&ss, len, &peer))
    peerName = peer.toString();
  SocketComm* comm = newComm(false, std::move(lc->ctrl), std::move(lc->data), std::move(peerName));
  startHelpers(comm, comm->data.empty() ? 0 : lc->nThreads, lc->nSocksPerThread);
  lc->haveNonce = false;
  lc->data.clear();
  *recvComm = comm;
  return kOk;
}

Status socketCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return kOk;
}

}  // namespace collcomm::detail::netsocket
