// Inbox: accepting, authenticating and incrementally reading connections from other ranks.
#include "bootstrap/inbox.h"

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace collcomm::detail {

Inbox::Inbox(Socket listener, const uint64_t secret[2], int rank, int nranks)
    : listener_(std::move(listener)),
      rank_(rank),
      nranks_(nranks),
      openFrom_(nranks, 0),
      gone_(nranks, 0),
      goneWhy_(nranks) {
  secret_[0] = secret[0];
  secret_[1] = secret[1];
}

void Inbox::poll(pollfd* extra, size_t nExtra, int timeoutMs) {
  fds_.assign(extra, extra + nExtra);
  fds_.push_back(pollfd{listener_.fd(), POLLIN, 0});
  for (auto& c : conns_) fds_.push_back(pollfd{c->sock.fd(), POLLIN, 0});
  int n = ::poll(fds_.data(), fds_.size(), timeoutMs);
  for (size_t i = 0; i < nExtra; ++i) extra[i].revents = n > 0 ? fds_[i].revents : 0;
  if (n > 0) {
    // conns_ may grow in acceptPending, so read the polled ones first.
    size_t polled = conns_.size();
    for (size_t i = 0; i < polled; ++i) {
      if (fds_[nExtra + 1 + i].revents != 0 && conns_[i]->sock.valid()) readFrom(*conns_[i]);
    }
    if (fds_[nExtra].revents != 0) acceptPending();
  }
  auto now = std::chrono::steady_clock::now();
  for (auto& c : conns_) {
    if (c->sock.valid() && c->src < 0 && now - c->acceptedAt >= std::chrono::milliseconds(wire::kHelloTimeoutMs))
      reject(*c, "it sent no hello");
  }
  std::erase_if(conns_, [](const std::unique_ptr<Conn>& c) { return !c->sock.valid(); });
}

void Inbox::acceptPending() {
  for (;;) {
    auto c = std::make_unique<Conn>();
    IoStatus s = listener_.tryAccept(&c->sock, &c->from);
    if (!s.ok()) {
      CC_INFO(kSubsysBootstrap, "bootstrap rank %d: accept failed: %s", rank_, s.describe().c_str());
      return;
    }
    if (!c->sock.valid()) return;
    c->acceptedAt = std::chrono::steady_clock::now();
    conns_.push_back(std::move(c));
  }
}

void Inbox::reject(Conn& c, const char* why) {
  CC_INFO(kSubsysBootstrap, "bootstrap rank %d: closed a connection from %s: %s", rank_, c.from.toString().c_str(),
          why);
  c.sock.close();
}

void Inbox::lost(Conn& c, const std::string& why) {
  c.sock.close();
  if (--openFrom_[c.src] == 0) {
    gone_[c.src] = 1;
    goneWhy_[c.src] = why;
  }
}

bool Inbox::onHello(Conn& c) {
  const wire::HelloMsg& h = c.hello;
  if (!wire::sameSecret(h.secret, secret_)) {
    reject(c, "wrong secret (another job's rank?)");
    return false;
  }
  if (h.srcRank < 0 || h.srcRank >= nranks_ || h.srcRank == rank_) {
    reject(c, "its rank is out of range");
    return false;
  }
  if (h.kind == static_cast<uint32_t>(wire::ConnKind::kRing)) {
    if (ringSeen_ || h.srcRank != (rank_ + nranks_ - 1) % nranks_) {
      reject(c, "unexpected ring connection");
      return false;
    }
    ringSeen_ = true;
    ring_ = std::move(c.sock);  // leaves c invalid: erased from conns_ after this round
    return false;
  }
  if (h.kind != static_cast<uint32_t>(wire::ConnKind::kP2p)) {
    reject(c, "unknown connection kind");
    return false;
  }
  c.src = h.srcRank;
  ++openFrom_[c.src];
  gone_[c.src] = 0;
  return true;
}

void Inbox::readFrom(Conn& c) {
  while (c.src < 0) {
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
    if (!onHello(c)) return;
  }
  for (;;) {
    if (!c.inPayload) {
      IoStatus s = c.sock.recvSome(&c.header, sizeof(c.header), &c.headerGot);
      if (!s.ok()) {
        lost(c, c.headerGot != 0 ? "it closed in the middle of a message" : s.err != 0 ? s.describe() : "");
        return;
      }
      if (c.headerGot < sizeof(c.header)) return;
      if (c.header.bytes > wire::kMaxMessageBytes) {
        CC_WARN("bootstrap rank %d: rank %d sent a message header of %llu bytes; closing its connection", rank_, c.src,
                static_cast<unsigned long long>(c.header.bytes));
        lost(c, "it sent a corrupted message header");
        return;
      }
      c.payload.assign(c.header.bytes, 0);
      c.payloadGot = 0;
      c.inPayload = true;
    }
    IoStatus s = c.sock.recvSome(c.payload.data(), c.payload.size(), &c.payloadGot);
    if (!s.ok()) {
      lost(c, "it closed in the middle of a message");
      return;
    }
    if (c.payloadGot < c.payload.size()) return;
    queues_[{c.src, c.header.tag}].push_back(std::move(c.payload));
    c.payload = {};
    c.inPayload = false;
    c.headerGot = 0;
  }
}

bool Inbox::take(int peer, uint64_t tag, std::vector<char>* out) {
  auto it = queues_.find({peer, tag});
  if (it == queues_.end()) return false;
  *out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
  return true;
}

void Inbox::deliverLocal(uint64_t tag, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  queues_[{rank_, tag}].emplace_back(p, p + size);
}

bool Inbox::peerGone(int peer, std::string* why) const {
  if (openFrom_[peer] != 0 || !gone_[peer]) return false;
  *why = goneWhy_[peer];
  return true;
}

Socket Inbox::takeRing() { return std::move(ring_); }

}  // namespace collcomm::detail
