// Inbox: accepting, authenticating and incrementally reading connections from other processes.
#include "bootstrap/inbox.h"

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace collcomm::detail {

Inbox::Inbox(Socket listener, const uint64_t secret[2], std::vector<int> procOf, int selfProc)
    : listener_(std::move(listener)), procOf_(std::move(procOf)), selfProc_(selfProc) {
  secret_[0] = secret[0];
  secret_[1] = secret[1];
}

void Inbox::poll(pollfd* extra, size_t nExtra, int timeoutMs, Events* ev) {
  fds_.assign(extra, extra + nExtra);
  // Out of descriptors, the waiting connection keeps the listener readable: look again later.
  const bool acceptPaused = std::chrono::steady_clock::now() < acceptPausedUntil_;
  fds_.push_back(pollfd{listener_.fd(), static_cast<short>(acceptPaused ? 0 : POLLIN), 0});
  for (auto& c : conns_) fds_.push_back(pollfd{c->sock.fd(), POLLIN, 0});
  int n = ::poll(fds_.data(), fds_.size(), timeoutMs);
  for (size_t i = 0; i < nExtra; ++i) extra[i].revents = n > 0 ? fds_[i].revents : 0;
  if (n > 0) {
    // conns_ may grow in acceptPending, so read the polled ones first.
    size_t polled = conns_.size();
    for (size_t i = 0; i < polled; ++i) {
      if (fds_[nExtra + 1 + i].revents != 0 && conns_[i]->sock.valid()) readFrom(*conns_[i], ev);
    }
    if (fds_[nExtra].revents != 0) acceptPending();
  }
  auto now = std::chrono::steady_clock::now();
  for (auto& c : conns_) {
    if (c->sock.valid() && c->proc < 0 && now - c->acceptedAt >= std::chrono::milliseconds(wire::kHelloTimeoutMs))
      reject(*c, "it sent no hello");
  }
  std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return !c->sock.valid(); });
}

void Inbox::acceptPending() {
  for (;;) {
    auto c = std::make_unique<Conn>();
    IoStatus s = listener_.tryAccept(&c->sock, &c->from);
    if (!s.ok()) {
      // EMFILE and the like: the connection stays in the backlog; a later poll tries again.
      CC_INFO(kSubsysBootstrap, "bootstrap: accept failed: %s", s.describe().c_str());
      acceptPausedUntil_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
      return;
    }
    if (!c->sock.valid()) return;
    c->acceptedAt = std::chrono::steady_clock::now();
    conns_.push_back(std::move(c));
  }
}

void Inbox::reject(Conn& c, const char* why) {
  CC_INFO(kSubsysBootstrap, "bootstrap: closed a connection from %s: %s", c.from.toString().c_str(), why);
  c.sock.close();
}

void Inbox::lost(Conn& c, const std::string& why, Events* ev) {
  c.sock.close();
  ev->lost.emplace_back(c.proc, why);
}

bool Inbox::onHello(Conn& c, Events* ev) {
  const wire::HelloMsg& h = c.hello;
  if (!wire::sameSecret(h.secret, secret_)) {
    reject(c, "wrong secret (another job's process?)");
    return false;
  }
  if (h.srcRank < 0 || h.srcRank >= static_cast<int>(procOf_.size()) || procOf_[h.srcRank] == selfProc_) {
    reject(c, "its rank is out of range or belongs to this process");
    return false;
  }
  c.proc = procOf_[h.srcRank];
  ev->opened.push_back(c.proc);
  return true;
}

const char* Inbox::badHeader(const Conn& c) const {
  const wire::MsgHeader& h = c.header;
  const int n = static_cast<int>(procOf_.size());
  if (h.bytes > wire::kMaxMessageBytes) return "it sent a corrupted message header (size)";
  if (h.src < 0 || h.src >= n || procOf_[h.src] != c.proc) return "it sent a message from a rank of another process";
  if (h.dst < 0 || h.dst >= n || procOf_[h.dst] != selfProc_) return "it sent a message for a rank of another process";
  if (h.channel > static_cast<uint32_t>(wire::Channel::kLeft)) return "it sent a message on an unknown channel";
  return nullptr;
}

void Inbox::readFrom(Conn& c, Events* ev) {
  if (c.proc < 0) {
    IoStatus s = c.sock.recvSome(&c.hello, sizeof(c.hello), &c.helloGot);
    if (!s.ok()) {
      if (c.helloGot > 0) reject(c, "it closed during its hello");
      c.sock.close();
      return;
    }
    if (c.helloGot >= 2 * sizeof(uint32_t) && (c.hello.magic != wire::kMagic || c.hello.version != wire::kVersion)) {
      reject(c, "not a collcomm bootstrap connection (or another version)");
      return;
    }
    if (c.helloGot < sizeof(c.hello)) return;
    if (!onHello(c, ev)) return;
  }
  for (;;) {
    if (!c.inPayload) {
      IoStatus s = c.sock.recvSome(&c.header, sizeof(c.header), &c.headerGot);
      if (!s.ok()) {
        lost(c, c.headerGot != 0 ? "it closed in the middle of a message" : s.err != 0 ? s.describe() : "", ev);
        return;
      }
      if (c.headerGot < sizeof(c.header)) return;
      if (const char* why = badHeader(c)) {
        CC_WARN("bootstrap: the connection from %s: %s; closing it", c.from.toString().c_str(), why);
        lost(c, why, ev);
        return;
      }
      c.payload.assign(c.header.bytes, 0);
      c.payloadGot = 0;
      c.inPayload = true;
    }
    IoStatus s = c.sock.recvSome(c.payload.data(), c.payload.size(), &c.payloadGot);
    if (!s.ok()) {
      lost(c, "it closed in the middle of a message", ev);
      return;
    }
    if (c.payloadGot < c.payload.size()) return;
    ev->messages.push_back(Message{c.header.src, c.header.dst, static_cast<wire::Channel>(c.header.channel),
                                   c.header.tag, std::move(c.payload)});
    c.payload = {};
    c.inPayload = false;
    c.headerGot = 0;
  }
}

}  // namespace collcomm::detail
