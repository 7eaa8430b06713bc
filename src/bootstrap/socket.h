// TCP socket helpers shared by the bootstrap and the NET transport: addresses (IPv4/IPv6 parsing
// and formatting), network interface selection (COLLCOMM_SOCKET_IFNAME / COLLCOMM_SOCKET_FAMILY,
// NCCL_SOCKET_IFNAME's rules), and an RAII non-blocking TCP socket.
//
// Errors: socket calls return an IoStatus (what happened at the socket level) and record nothing;
// the caller knows which peer and which operation it was, so it writes the user's sentence with
// CC_ERROR. Blocking calls end by their Deadline or when *abortFlag becomes true (checked at least
// every kAbortPollMs). Setup/control tier: these calls make syscalls and may allocate.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace collcomm::detail {

// Longest a blocking socket call goes without looking at its abort flag.
inline constexpr int kAbortPollMs = 50;

// An IPv4 or IPv6 socket address (with port).
class SocketAddress {
 public:
  SocketAddress() = default;
  // False if `len` is not a valid sockaddr_in/sockaddr_in6 length for sa's family.
  static bool fromSockaddr(const void* sa, size_t len, SocketAddress* out);
  // "1.2.3.4:80", "[fd00::1]:80" or "name:80" (resolved with getaddrinfo, restricted to `family`
  // unless AF_UNSPEC). On failure returns false and says why in *why.
  static bool parse(const std::string& text, int family, SocketAddress* out, std::string* why);

  bool valid() const { return len_ != 0; }
  int family() const { return storage_.ss_family; }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t len() const { return len_; }
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  // "1.2.3.4:80" or "[fd00::1]:80"; "(none)" when invalid.
  std::string toString() const;
  // Host part only: "1.2.3.4" or "fd00::1".
  std::string hostString() const;
  bool operator==(const SocketAddress& o) const;

 private:
  sockaddr_storage storage_{};
  socklen_t len_ = 0;
};

struct NetInterface {
  std::string name;
  SocketAddress addr;  // port 0
};

// COLLCOMM_SOCKET_IFNAME syntax: comma-separated interface name prefixes; a leading '^' turns the
// list into an exclude list; a leading '=' (after any '^') makes the names exact instead of prefixes.
class IfnameFilter {
 public:
  static IfnameFilter parse(const std::string& spec);
  bool matches(const std::string& ifname) const;

 private:
  bool exclude_ = false;
  bool exact_ = false;
  std::vector<std::string> names_;
};

// Every interface that is up and has an IPv4 or IPv6 address (IPv6 link-local skipped: it needs a
// scope id), in the system's order; an interface with several addresses appears several times.
std::vector<NetInterface> listInterfaces();

// Pure selection over `all` (unit-testable with a fake list): at most maxCount interfaces, one
// address per interface name, of `family` unless AF_UNSPEC. With a non-empty `spec`, the interfaces
// it matches. Without one: ib* first; else anything but docker* and lo; else docker*; else lo.
std::vector<NetInterface> selectInterfaces(const std::vector<NetInterface>& all, const std::string& spec, int family,
                                           size_t maxCount);

// AF_INET, AF_INET6 or AF_UNSPEC from COLLCOMM_SOCKET_FAMILY (an unknown value warns, AF_UNSPEC).
int socketFamilyParam();

// selectInterfaces over the machine's interfaces with COLLCOMM_SOCKET_IFNAME/FAMILY. Fails with a
// sentence when the user's COLLCOMM_SOCKET_IFNAME matches nothing, or no interface has an address.
Status findInterfaces(size_t maxCount, std::vector<NetInterface>* out);

enum class IoCode {
  kOk,
  kClosed,   // the peer closed or reset the connection (err: 0 for EOF, else ECONNRESET/EPIPE...)
  kTimeout,  // the deadline passed (err: the last retried connect error, if any)
  kAborted,  // *abortFlag became true
  kError,    // any other failure (err: errno)
};

struct IoStatus {
  IoCode code = IoCode::kOk;
  int err = 0;
  bool ok() const { return code == IoCode::kOk; }
  // A short phrase for sentences: "the connection was closed", "connection reset by peer", ...
  std::string describe() const;
};

// True when a connected TCP socket's local and peer addresses are the same: it connected to itself.
bool connectedToItself(int fd);

// Owns one file descriptor (closed on destruction); move-only. Every socket it creates is
// non-blocking and close-on-exec; connected sockets have TCP_NODELAY; listeners SO_REUSEADDR.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void close();

  // Binds `addr` (port 0: an ephemeral port) and listens. *bound gets the actual address.
  static IoStatus listen(const SocketAddress& addr, Socket* out, SocketAddress* bound);
  // Connects, retrying refused/timed-out/reset attempts (the listener may not be up yet) with a
  // short backoff until the deadline; then kTimeout with err = the last attempt's errno.
  static IoStatus connect(const SocketAddress& addr, Deadline deadline, const std::atomic<bool>* abortFlag,
                          Socket* out);

  // Waits for one connection on this listener.
  IoStatus accept(Deadline deadline, const std::atomic<bool>* abortFlag, Socket* out,
                  SocketAddress* peer = nullptr) const;
  // Non-blocking: accepts one pending connection, or leaves *out invalid when none is pending.
  IoStatus tryAccept(Socket* out, SocketAddress* peer = nullptr) const;

  // Whole buffers, blocking up to the deadline (EINTR and partial transfers handled).
  IoStatus sendAll(const void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag) const;
  IoStatus recvAll(void* data, size_t size, Deadline deadline, const std::atomic<bool>* abortFlag) const;
  // Non-blocking: transfers what the kernel takes/has now, advancing *done toward size. kOk may
  // mean no progress (would block); kClosed on EOF or reset.
  IoStatus sendSome(const void* data, size_t size, size_t* done) const;
  IoStatus recvSome(void* data, size_t size, size_t* done) const;

 private:
  int fd_ = -1;
};

// Waits until `fd` has any of `events` (or an error/hangup, which the next I/O call reports), the
// deadline passes (kTimeout) or *abortFlag is set (kAborted).
IoStatus waitFd(int fd, short events, Deadline deadline, const std::atomic<bool>* abortFlag);

// A Deadline `ms` milliseconds from now (at least 1 ms: Deadline::afterSeconds(0) means never).
Deadline deadlineInMs(int64_t ms);

}  // namespace collcomm::detail
