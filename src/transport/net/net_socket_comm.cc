// A connection of the socket backend (SocketComm): its sockets (buffer sizes, one non-blocking
// send or receive), how it fails, its farewell, and its end.
//
// Farewell: the receiving side may write {kFarewellMagic, word} back on the control socket before
// it closes (the only bytes that ever travel that way); a send comm that breaks reads it before it
// fails (see breakSend).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "transport/net/net_socket_internal.h"
#include "transport/net/net_socket_wire.h"

namespace collcomm::detail::netsocket {
namespace {

// SO_SNDBUF/SO_RCVBUF of the sockets carrying data, where the system allows that much (else the
// kernel's autotuning stays): eight 128 KiB steps in flight never wait for the receiving proxy to
// drain the queue, and a new connection is fast at once (autotuning starts at 16 KiB of send
// buffer). On loopback with one core per rank: 2.6-2.8 GB/s at 16 MiB against 1.7-2.6 autotuned.
constexpr int kSocketBufferBytes = 1 << 20;
// Reads of a receiving control socket between two TCP_QUICKACK=0 calls (see readCtrl).
constexpr uint32_t kDelayedAckRearmReads = 64;
// How long a broken send connection waits for the receiver's farewell (see breakSend).
constexpr auto kFarewellWait = std::chrono::milliseconds(200);

// Sets kSocketBufferBytes where net.core.wmem_max/rmem_max allow it: a capped size would be
// smaller than what autotuning reaches, and setting a size turns autotuning off.
void sizeBuffers(const Socket& s) {
  static const bool sndOk = sysctlInt("/proc/sys/net/core/wmem_max") >= kSocketBufferBytes;
  static const bool rcvOk = sysctlInt("/proc/sys/net/core/rmem_max") >= kSocketBufferBytes;
  const int bytes = kSocketBufferBytes;
  if (sndOk) setsockopt(s.fd(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  if (rcvOk) setsockopt(s.fd(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

}  // namespace

// One non-blocking send or receive: advances *done by what the kernel took or had (kOk with no
// progress when it would block); kClosed on EOF or reset.
IoStatus sendOnce(int fd, const void* p, size_t n, size_t* done) {
  for (;;) {
    const ssize_t k = ::send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k >= 0) {
      *done += static_cast<size_t>(k);
      return {};
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return {IoCode::kClosed, err};
    return {IoCode::kError, err};
  }
}

IoStatus recvOnce(int fd, void* p, size_t n, size_t* done) {
  for (;;) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      *done += static_cast<size_t>(k);
      return {};
    }
    if (k == 0) return n == 0 ? IoStatus{} : IoStatus{IoCode::kClosed, 0};
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return {IoCode::kClosed, err};
    return {IoCode::kError, err};
  }
}

// A receiving control socket carries nothing back but a farewell, so the kernel sees a one-way
// stream and acknowledges each small message with a packet of its own as soon as the reader has
// drained it. On loopback that ACK is a whole trip through the TCP stack on the reader's core: a
// quarter of the kernel time of an 8-byte allreduce between two processes. TCP_QUICKACK=0 puts
// the socket in delayed-ACK mode, where a second small message still unacknowledged (or a full
// segment, or the delayed-ACK timer) sends the ACK: one ACK per two messages. The kernel leaves the
// mode when its delayed-ACK timer fires (an idle pause), so the call is repeated every
// kDelayedAckRearmReads reads. The sender never waits for these ACKs (TCP_NODELAY, and two small
// messages in flight are far inside the congestion window).
IoStatus readCtrl(SocketComm* comm, void* p, size_t n, size_t* done) {
  const size_t before = *done;
  const IoStatus st = recvOnce(comm->ctrl.fd(), p, n, done);
  if (*done != before && comm->ctrlReads++ % kDelayedAckRearmReads == 0) {
    const int off = 0;
    setsockopt(comm->ctrl.fd(), IPPROTO_TCP, TCP_QUICKACK, &off, sizeof(off));
  }
  return st;
}

SocketComm* newComm(bool isSend, Socket ctrl, std::vector<Socket> data, std::string peer) {
  auto* comm = new SocketComm();
  comm->isSend = isSend;
  comm->peer = std::move(peer);
  comm->ctrl = std::move(ctrl);
  comm->data = std::move(data);
  if (!isSend) comm->stage = std::make_unique<char[]>(kStageBytes);
  for (const Socket& s : comm->data) sizeBuffers(s);
  if (comm->data.empty()) sizeBuffers(comm->ctrl);
  return comm;
}

void destroyComm(SocketComm* comm) {
  stopHelpers(comm);
  delete comm;
}

// The connection failed for a reason other than the peer closing it: a sentence at WARN.
Status failComm(SocketComm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    return CC_ERROR(Status::kRemoteError, "net/socket: connection %s %s: %s", comm->isSend ? "to" : "from",
                    comm->peer.c_str(), what.c_str());
  }
  return Status::kRemoteError;
}

// The peer closed the connection: how peers leave (its transport reports which rank left, and
// why, where it matters), so only INFO here.
Status failClosed(SocketComm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    CC_INFO(kSubsysNet, "net/socket: connection %s %s: %s", comm->isSend ? "to" : "from", comm->peer.c_str(),
            what.c_str());
  }
  return Status::kRemoteError;
}

// Send side: the connection broke. The receiver writes its farewell on the control socket before
// it closes anything, so once the control socket has delivered it, or ended, or broken itself
// (the farewell precedes that close on the same stream), the failure is final. A data socket may
// report the close first (another stream); then the farewell gets kFarewellWait to arrive.
Status breakSend(SocketComm* comm, const std::string& why, bool onCtrl) {
  if (!comm->breaking) {
    comm->breaking = true;
    comm->breakAt = Clock::now();
    comm->breakWhy = why;
  }
  comm->breakOnCtrl |= onCtrl;
  for (;;) {
    const ssize_t n = ::recv(comm->ctrl.fd(), comm->farewellBuf + comm->farewellDone,
                             sizeof(comm->farewellBuf) - comm->farewellDone, MSG_DONTWAIT);
    if (n > 0) {
      comm->farewellDone += static_cast<size_t>(n);
      if (comm->farewellDone < sizeof(comm->farewellBuf)) continue;
      uint32_t magic = 0;
      memcpy(&magic, comm->farewellBuf, 4);
      if (magic == kFarewellMagic) {
        memcpy(&comm->farewellWord, comm->farewellBuf + 4, 4);
        comm->haveFarewell = true;
      }
      break;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !comm->breakOnCtrl &&
        Clock::now() - comm->breakAt < kFarewellWait)
      return kOk;  // the control socket is still open: the farewell may be on its way
    break;
  }
  return failClosed(comm, comm->breakWhy + (comm->haveFarewell ? " after leaving a farewell" : ""));
}

Status failIo(SocketComm* comm, const IoStatus& st, bool onCtrl) {
  if (st.code != IoCode::kClosed) return failComm(comm, st.describe());
  const std::string why = "the peer closed the connection (" + st.describe() + ")";
  return comm->isSend ? breakSend(comm, why, onCtrl) : failClosed(comm, why);
}

Status socketFarewell(void* recvComm, uint32_t word) {
  auto* comm = static_cast<SocketComm*>(recvComm);
  unsigned char buf[8];
  memcpy(buf, &kFarewellMagic, 4);
  memcpy(buf + 4, &word, 4);
  (void)::send(comm->ctrl.fd(), buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);  // 8 bytes into an idle direction
  return kOk;
}

bool socketPeerFarewell(void* sendComm, uint32_t* word) {
  auto* comm = static_cast<SocketComm*>(sendComm);
  if (!comm->haveFarewell) return false;
  *word = comm->farewellWord;
  return true;
}

}  // namespace collcomm::detail::netsocket
