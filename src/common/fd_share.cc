// Descriptors offered to other processes over an abstract Unix socket (see fd_share.h).
#include "common/fd_share.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/log.h"

namespace collcomm::detail {
namespace {

struct Request {
  uint64_t id;
  uint64_t key[2];
};

// The server's answer; the descriptor rides with kReplyOk.
enum ReplyCode : int32_t { kReplyOk = 0, kReplyUnknown = 1, kReplyWrongKey = 2, kReplyOtherUser = 3 };

// A request or reply that has not arrived within this is given up (the server's side: a peer that
// connects and says nothing must not hold the thread up).
constexpr int kServerIoTimeoutMs = 1000;

socklen_t abstractAddress(const char* name, sockaddr_un* addr) {
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  const size_t n = strnlen(name, sizeof(addr->sun_path) - 1);
  memcpy(addr->sun_path + 1, name, n);  // sun_path[0] == 0: the abstract namespace
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

void setIoTimeout(int fd, int ms) {
  const timeval tv{ms / 1000, (ms % 1000) * 1000};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// Sends a reply, with `fd` attached when it is not -1.
bool sendReply(int conn, ReplyCode code, int fd) {
  int32_t word = code;
  iovec iov{&word, sizeof(word)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(conn, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(word));
}

class FdServer;
FdServer& server();

class FdServer {
 public:
  Status offer(int fd, FdTicket* ticket) {
    std::lock_guard<std::mutex> lock(mu_);
    dropClosedOffers();
    CC_CHECK(startLocked());
    Offer o{};
    o.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (o.fd < 0)
      return CC_ERROR(Status::kSystemError, "duplicating descriptor %d to offer it failed: %s", fd, strerror(errno));
    if (getrandom(o.key, sizeof(o.key), 0) != static_cast<ssize_t>(sizeof(o.key))) {
      close(o.fd);
      return CC_ERROR(Status::kSystemError, "getrandom failed for a descriptor's key: %s", strerror(errno));
    }
    const uint64_t id = nextId_++;
    offers_[id] = o;
    memset(ticket, 0, sizeof(*ticket));
    memcpy(ticket->socket, name_, sizeof(ticket->socket));
    ticket->id = id;
    ticket->key[0] = o.key[0];
    ticket->key[1] = o.key[1];
    ticket->pid = getpid();
    return kOk;
  }

  // In a child after fork (pthread_atfork, with the lock taken before the fork): no thread serves
  // here; close what the parent offered. Nothing is allocated or freed in a fork handler (a
  // sanitizer's allocator stays locked until fork returns): the table is emptied at its next use.
  void forgetInChild() {
    if (listen_ >= 0) close(listen_);
    listen_ = -1;
    for (const auto& [id, o] : offers_) close(o.fd);
    offersClosed_ = true;
    mu_.unlock();
  }

  // Under mu_: drops the entries whose descriptors a fork handler closed.
  void dropClosedOffers() {
    if (!offersClosed_) return;
    offers_.clear();
    offersClosed_ = false;
  }

  void withdraw(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    dropClosedOffers();
    auto it = offers_.find(id);
    if (it == offers_.end()) return;
    close(it->second.fd);
    offers_.erase(it);
  }

 private:
  struct Offer {
    int fd;
    uint64_t key[2];
  };

  Status startLocked() {
    if (listen_ >= 0) return kOk;
    uint64_t salt = 0;
    if (getrandom(&salt, sizeof(salt), 0) != static_cast<ssize_t>(sizeof(salt)))
      return CC_ERROR(Status::kSystemError, "getrandom failed for the descriptor socket's name: %s", strerror(errno));
    snprintf(name_, sizeof(name_), "collcomm-fd-%d-%016llx", static_cast<int>(getpid()),
             static_cast<unsigned long long>(salt));
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return CC_ERROR(Status::kSystemError, "socket(AF_UNIX) failed: %s", strerror(errno));
    sockaddr_un addr;
    const socklen_t len = abstractAddress(name_, &addr);
    if (bind(s, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(s, 128) != 0) {
      const int err = errno;
      close(s);
      return CC_ERROR(Status::kSystemError, "serving descriptors on the abstract socket @%s failed: %s", name_,
                      strerror(err));
    }
    listen_ = s;
    // A child forked from here holds the socket and the offered descriptors but no server thread:
    // it closes them (the name would otherwise stay bound after this process died, and a peer would
    // wait out its deadline instead of hearing at once that nobody serves).
    // The lock is held across the fork, so that no other thread is inside an offer, a withdrawal
    // or a reply when the child copies the offers.
    static std::once_flag atFork;
    std::call_once(atFork, [] {
      (void)pthread_atfork([] { server().mu_.lock(); }, [] { server().mu_.unlock(); },
                           [] { server().forgetInChild(); });
    });
    // Lives with the process: the server is never destroyed (peers may ask until they are done). It
    // takes no signal, so that none interrupts its calls (the process's handlers run elsewhere).
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    std::thread([this, s] { serveForever(s); }).detach();
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    CC_INFO(kSubsysInit, "serving descriptors to peer processes on @%s", name_);
    return kOk;
  }

  void serveForever(int s) {
    for (;;) {
      const int conn = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) {
        if (errno != EINTR && errno != ECONNABORTED) poll(nullptr, 0, 10);  // out of descriptors: later
        continue;
      }
      serve(conn);
      close(conn);
    }
  }

  void serve(int conn) {
    setIoTimeout(conn, kServerIoTimeoutMs);
    Request req{};
    ssize_t got = 0;
    do {
      got = recv(conn, &req, sizeof(req), MSG_WAITALL);
    } while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(sizeof(req))) return;
    ucred cred{};
    socklen_t credLen = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0 || (cred.uid != getuid() && cred.uid != 0)) {
      (void)sendReply(conn, kReplyOtherUser, -1);
      return;
    }
    // Under the lock until sent, so that a withdrawal does not close the descriptor under it; a
    // local socket takes a four-byte reply without blocking.
    std::lock_guard<std::mutex> lock(mu_);
    dropClosedOffers();
    auto it = offers_.find(req.id);
    if (it == offers_.end()) {
      (void)sendReply(conn, kReplyUnknown, -1);
      return;
    }
    if (it->second.key[0] != req.key[0] || it->second.key[1] != req.key[1]) {
      (void)sendReply(conn, kReplyWrongKey, -1);
      return;
    }
    (void)sendReply(conn, kReplyOk, it->second.fd);
  }

  std::mutex mu_;
  int listen_ = -1;
  char name_[sizeof(FdTicket::socket)] = {};
  uint64_t nextId_ = 1;
  std::unordered_map<uint64_t, Offer> offers_;
  bool offersClosed_ = false;  // offers_ lists descriptors a fork handler closed (forgetInChild)
};

FdServer& server() {
  static FdServer* s = new FdServer();  // never destroyed: its thread serves for the process's life
  return *s;
}

// Waits until `fd` is ready for `events` or the deadline passes; false on the deadline.
bool waitReady(int fd, short events, const Deadline& deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, deadline.remainingMs());
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // let the call that follows report it
  }
}

}  // namespace

Status offerFd(int fd, FdTicket* ticket) { return server().offer(fd, ticket); }

void withdrawFd(uint64_t id) { server().withdraw(id); }

Status fetchFd(const FdTicket& ticket, int peerRank, const Deadline& deadline, int* fd) {
  *fd = -1;
  char name[sizeof(ticket.socket) + 1] = {};
  memcpy(name, ticket.socket, sizeof(ticket.socket));
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return CC_ERROR(Status::kSystemError, "socket(AF_UNIX) failed: %s", strerror(errno));
  struct Closer {
    int s;
    ~Closer() { close(s); }
  } closer{s};
  sockaddr_un addr;
  const socklen_t len = abstractAddress(name, &addr);
  int connected = connect(s, reinterpret_cast<sockaddr*>(&addr), len);
  // EAGAIN: the server's backlog is full, so it is busy, not gone: asked again until the deadline.
  while (connected != 0 && errno == EAGAIN && !deadline.expired()) {
    (void)poll(nullptr, 0, 1);
    connected = connect(s, reinterpret_cast<sockaddr*>(&addr), len);
  }
  if (connected != 0) {
    const int err = errno;
    if (err == EAGAIN)
      return CC_ERROR(Status::kTimeout,
                      "rank %d's process (pid %d) took no request for shared memory before the deadline: its queue "
                      "of requests stayed full",
                      peerRank, ticket.pid);
    return CC_ERROR(Status::kRemoteError,
                    "rank %d's process (pid %d) does not serve its shared memory at @%s (%s): it exited, or it runs in "
                    "another network namespace (set COLLCOMM_HOSTID apart for ranks that cannot reach each other's "
                    "abstract sockets)",
                    peerRank, ticket.pid, name, strerror(err));
  }
  const Request req{ticket.id, {ticket.key[0], ticket.key[1]}};
  if (!waitReady(s, POLLOUT, deadline))
    return CC_ERROR(Status::kTimeout,
                    "rank %d's process (pid %d) took no request for shared memory before the deadline", peerRank,
                    ticket.pid);
  if (send(s, &req, sizeof(req), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(req)))
    return CC_ERROR(Status::kRemoteError, "asking rank %d's process (pid %d) for shared memory failed: %s", peerRank,
                    ticket.pid, strerror(errno));
  if (!waitReady(s, POLLIN, deadline))
    return CC_ERROR(Status::kTimeout, "rank %d's process (pid %d) did not hand over shared memory before the deadline",
                    peerRank, ticket.pid);
  int32_t code = -1;
  iovec iov{&code, sizeof(code)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got = 0;
  do {
    got = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  int passed = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); got > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
      memcpy(&passed, CMSG_DATA(c), sizeof(int));
  if (got != static_cast<ssize_t>(sizeof(code)) || code != kReplyOk || passed < 0) {
    if (passed >= 0) close(passed);
    const char* why = got != static_cast<ssize_t>(sizeof(code)) ? "it closed the connection without an answer"
                      : code == kReplyUnknown                   ? "it no longer offers that memory"
                      : code == kReplyWrongKey                  ? "it refused the key presented"
                      : code == kReplyOtherUser                 ? "it serves only processes of its own user"
                                                                : "no descriptor came with its answer";
    return CC_ERROR(Status::kRemoteError, "rank %d's process (pid %d) did not hand over shared memory: %s", peerRank,
                    ticket.pid, why);
  }
  *fd = passed;
  return kOk;
}

}  // namespace collcomm::detail
