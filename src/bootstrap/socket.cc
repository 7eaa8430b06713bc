// SocketAddress and Socket: address parsing/formatting and the non-blocking TCP socket with
// deadline- and abort-bounded waits. (Interface selection lives in socket_interfaces.cc.)
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace collcomm::detail {
namespace {

bool aborted(const std::atomic<bool>* abortFlag) {
  return abortFlag != nullptr && abortFlag->load(std::memory_order_acquire);
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Errors on which a connect is tried again: the listener may not be listening yet, or its
// backlog overflowed.
bool connectRetryable(int err) { return err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET || err == EAGAIN; }

// Sleeps up to `ms` (less if the deadline comes first), waking for the abort flag.
IoStatus sleepMs(int ms, Deadline deadline, const std::atomic<bool>* abortFlag) {
  auto until = Deadline::Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (aborted(abortFlag)) return {IoCode::kAborted, 0};
    if (deadline.expired()) return {IoCode::kTimeout, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Deadline::Clock::now()).count();
    if (left <= 0) return {};
    int slice = std::min<int>({static_cast<int>(left), kAbortPollMs, std::max(1, deadline.remainingMs())});
    poll(nullptr, 0, slice);
  }
}

}  // namespace

bool connectedToItself(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t selfLen = sizeof(self), peerLen = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &selfLen) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0)
    return false;
  SocketAddress a, b;
  return SocketAddress::fromSockaddr(&self, selfLen, &a) && SocketAddress::fromSockaddr(&peer, peerLen, &b) && a == b;
}

// ---- SocketAddress

bool SocketAddress::fromSockaddr(const void* sa, size_t len, SocketAddress* out) {
  if (sa == nullptr || len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage)) return false;
  sa_family_t family;
  memcpy(&family, static_cast<const char*>(sa) + offsetof(sockaddr, sa_family), sizeof(family));
  if (!((family == AF_INET && len == sizeof(sockaddr_in)) || (family == AF_INET6 && len == sizeof(sockaddr_in6))))
    return false;
  SocketAddress a;
  memcpy(&a.storage_, sa, len);
  a.len_ = static_cast<socklen_t>(len);
  *out = a;
  return true;
}

bool SocketAddress::parse(const std::string& text, int family, SocketAddress* out, std::string* why) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *why = "expected [ipv6-address]:port";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      *why = "expected host:port";
      return false;
    }
    if (text.find(':') != colon) {
      *why = "an IPv6 address needs brackets: [address]:port";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  char* end = nullptr;
  long p = port.empty() ? -1 : strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    *why = "the port \"" + port + "\" is not a number in 0..65535";
    return false;
  }
  if (host.empty()) {
    *why = "the host is empty";
    return false;
  }
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    *why = "cannot resolve \"" + host + "\": " + gai_strerror(rc);
    return false;
  }
  SocketAddress a;
  bool ok = false;
  for (addrinfo* r = res; r != nullptr && !ok; r = r->ai_next) ok = fromSockaddr(r->ai_addr, r->ai_addrlen, &a);
  freeaddrinfo(res);
  if (!ok) {
    *why = "\"" + host + "\" has no IPv4 or IPv6 address";
    return false;
  }
  a.setPort(static_cast<uint16_t>(p));
  *out = a;
  return true;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr) >> 24) == 127;
  }
  if (family() == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&a);
  }
  return false;
}

std::string SocketAddress::hostString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof(buf));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf, sizeof(buf));
  } else {
    return "(none)";
  }
  return buf;
}

std::string SocketAddress::toString() const {
  if (!valid()) return "(none)";
  std::string host = hostString();
  std::string p = std::to_string(port());
  return family() == AF_INET6 ? "[" + host + "]:" + p : host + ":" + p;
}

bool SocketAddress::operator==(const SocketAddress& o) const {
  if (len_ != o.len_ || family() != o.family()) return false;
  if (family() == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
    auto* b = reinterpret_cast<const sockaddr_in*>(&o.storage_);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
    auto* b = reinterpret_cast<const sockaddr_in6*>(&o.storage_);
    return a->sin6_port == b->sin6_port && memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0 &&
           a->sin6_scope_id == b->sin6_scope_id;
  }
  return len_ == 0;
}

// ---- IoStatus

std::string IoStatus::describe() const {
  switch (code) {
    case IoCode::kOk:
      return "success";
    case IoCode::kClosed:
      return err == 0 ? "the connection was closed" : std::string(strerror(err));
    case IoCode::kTimeout:
      return err == 0 ? "the deadline passed"
                      : "the deadline passed (last attempt: " + std::string(strerror(err)) + ")";
    case IoCode::kAborted:
      return "aborted";
    case IoCode::kError:
      return strerror(err);
  }
  return "unknown";
}

// ---- Socket

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

IoStatus Socket::listen(const SocketAddress& addr, Socket* out, SocketAddress* bound) {
  Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) return {IoCode::kError, errno};
  int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), addr.sa(), addr.len()) != 0) return {IoCode::kError, errno};
  if (::listen(s.fd(), SOMAXCONN) != 0) return {IoCode::kError, errno};
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {IoCode::kError, errno};
  SocketAddress b;
  if (!SocketAddress::fromSockaddr(&ss, len, &b)) return {IoCode::kError, EAFNOSUPPORT};
  *bound = b;
  *out = std::move(s);
  return {};
}

IoStatus Socket::connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abortFlag,
                         Socket* out) {
  int backoffMs = 5;
  int lastErr = 0;
  for (;;) {
    if (aborted(abortFlag)) return {IoCode::kAborted, 0};
    if (deadline.expired()) return {IoCode::kTimeout, lastErr};
    Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid()) return {IoCode::kError, errno};
    int err = 0;
    if (::connect(s.fd(), addr.sa(), addr.len()) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        IoStatus w = waitFd(s.fd(), POLLOUT, deadline, abortFlag);
        if (!w.ok()) return {w.code, w.code == IoCode::kTimeout ? lastErr : w.err};
        socklen_t len = sizeof(err);
        if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    // A connect to a port in the ephemeral range while nobody listens there can pick that very
    // port as its own and meet itself (TCP simultaneous open); it then also holds the port the
    // listener is about to bind. Treated as refused: closed at once and tried again.
    if (err == 0 && connectedToItself(s.fd())) err = ECONNREFUSED;
    if (err == 0) {
      setNoDelay(s.fd());
      *out = std::move(s);
      return {};
    }
    if (!connectRetryable(err)) return {IoCode::kError, err};
    lastErr = err;
    IoStatus w = sleepMs(backoffMs, deadline, abortFlag);
    if (!w.ok()) return {w.code, lastErr};
    backoffMs = std::min(backoffMs * 2, 100);
  }
}

IoStatus Socket::tryAccept(Socket* out, SocketAddress* peer) const {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setNoDelay(fd);
      *out = Socket(fd);
      if (peer != nullptr && !SocketAddress::fromSockaddr(&ss, len, peer)) *peer = SocketAddress();
      return {};
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;  // that one is gone; try the next
    if (err == EAGAIN || err == EWOULDBLOCK) {
      out->close();
      return {};
    }
    return {IoCode::kError, err};
  }
}

IoStatus Socket::accept(Deadline deadline, const std::atomic<bool>* abortFlag, Socket* out, SocketAddress* peer) const {
  for (;;) {
    IoStatus s = tryAccept(out, peer);
    if (!s.ok() || out->valid()) return s;
    s = waitFd(fd_, POLLIN, deadline, abortFlag);
    if (!s.ok()) return s;
  }
}

IoStatus Socket::sendSome(const void* data, size_t size, size_t* done) const {
  const char* p = static_cast<const char*>(data);
  while (*done < size) {
    ssize_t n = ::send(fd_, p + *done, size - *done, MSG_NOSIGNAL);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) return {};
    if (n < 0 && (err == ECONNRESET || err == EPIPE || err == ENOTCONN)) return {IoCode::kClosed, err};
    return {IoCode::kError, n < 0 ? err : EIO};
  }
  return {};
}

IoStatus Socket::recvSome(void* data, size_t size, size_t* done) const {
  char* p = static_cast<char*>(data);
  while (*done < size) {
    ssize_t n = ::recv(fd_, p + *done, size - *done, 0);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return {IoCode::kClosed, 0};
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return {IoCode::kClosed, err};
    return {IoCode::kError, err};
  }
  return {};
}

IoStatus Socket::sendAll(const void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag) const {
  size_t done = 0;
  for (;;) {
    IoStatus s = sendSome(data, size, &done);
    if (!s.ok() || done == size) return s;
    s = waitFd(fd_, POLLOUT, deadline, abortFlag);
    if (!s.ok()) return s;
  }
}

IoStatus Socket::recvAll(void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag) const {
  size_t done = 0;
  for (;;) {
    IoStatus s = recvSome(data, size, &done);
    if (!s.ok() || done == size) return s;
    s = waitFd(fd_, POLLIN, deadline, abortFlag);
    if (!s.ok()) return s;
  }
}

IoStatus waitFd(int fd, short events, Deadline deadline, const std::atomic<bool>* abortFlag) {
  for (;;) {
    if (aborted(abortFlag)) return {IoCode::kAborted, 0};
    int left = deadline.remainingMs();
    if (left <= 0 && deadline.expired()) return {IoCode::kTimeout, 0};
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, std::clamp(left, 1, kAbortPollMs));
    if (n > 0) return {};
    if (n < 0 && errno != EINTR) return {IoCode::kError, errno};
  }
}

Deadline deadlineInMs(int64_t ms) { return Deadline::afterSeconds(std::max<int64_t>(ms, 1) / 1000.0); }

}  // namespace collcomm::detail
