// Pairwise connection setup over the bootstrap (see connect.h).
#include "transport/connect.h"

#include <cstring>
#include <vector>

namespace collcomm::detail {
const TransportOps* pickTransport(const PeerInfo& self, const PeerInfo& peer, uint32_t* index) {
  int count = 0;
  const TransportOps* const* table = transportTable(&count);
  // FIFOs of GPU ranks must be device-visible: only transports that say so make those.
  const bool gpu = self.device >= 0 || peer.device >= 0;
  for (int i = 0; i < count; ++i) {
    if (table[i]->deviceFifo != gpu) continue;
    if (table[i]->canConnect(self, peer)) {
      *index = static_cast<uint32_t>(i);
      return table[i];
    }
  }
  return nullptr;
}

namespace {

constexpr uint64_t kAckTagBit = 1ull << 63;

template <class Conn>
void bindPeer(Conn& conn, const PeerInfo& self, const PeerInfo& peer, bool isSend, bool proxied) {
  conn.peer.rank = peer.rank;
  conn.peer.sameProcess = peer.processToken == self.processToken;
  conn.peer.proxied = proxied;
  conn.peer.pid = peer.hostHash == self.hostHash && samePidSpace(self, peer) ? peer.pid : -1;
  conn.peer.host = peer.host;
  conn.peer.peerState = isSend ? &conn.ctrl->receiverState : &conn.ctrl->senderState;
  conn.peer.ownState = isSend ? &conn.ctrl->senderState : &conn.ctrl->receiverState;
  conn.peer.waitBell = isSend ? &conn.ctrl->spaceBell : &conn.ctrl->dataBell;
  conn.peer.wakeBell = isSend ? &conn.ctrl->dataBell : &conn.ctrl->spaceBell;
  conn.simpleStep = 0;
  conn.llStep = 0;
  conn.llCursor = LlCursor{};
}

// The receiver's choice of a step's payload: what the transport asks for, if it is a usable size
// (a multiple of 64 bytes, within the slot), else the whole slot.
size_t stepMaxFor(const TransportOps& t, const FifoLayout& layout) {
  const size_t slot = layout.simpleStepBytes;
  const size_t want = t.stepMaxBytes != nullptr ? t.stepMaxBytes(layout) : slot;
  return want != 0 && want <= slot && want % 64 == 0 ? want : slot;
}

}  // namespace

Status connectPeers(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int self, const ConnSetup& setup,
                    std::vector<ConnectRequest>& requests) {
  const PeerInfo& me = peers[self];
  const Deadline deadline = setup.deadline;
  // 1. Receivers create FIFOs and describe them.
  std::vector<const TransportOps*> chosen(requests.size(), nullptr);  // per receiving request
  for (size_t k = 0; k < requests.size(); ++k) {
    ConnectRequest& r = requests[k];
    if (r.isSend) continue;
    const PeerInfo& peer = peers[r.peer];
    uint32_t index = 0;
    const TransportOps* t = pickTransport(me, peer, &index);
    if (t == nullptr)
      return CC_ERROR(Status::kInvalidUsage,
                      "no transport can connect rank %d (host %s) with rank %d (host %s)",
                      self, me.host, peer.rank, peer.host);
    ConnDesc desc{};
    CC_CHECK(t->createFifo(r.layout, me, peer, setup, r.mem, &desc));
    desc.transport = index;
    desc.simpleStepBytes = r.layout.simpleStepBytes;
    desc.simpleStepMax = static_cast<uint32_t>(stepMaxFor(*t, r.layout));
    desc.llStepLines = r.layout.llStepLines;
    bindFifo(*r.recv, (*r.mem)->base(), r.layout);
    r.recv->simpleStepMax = desc.simpleStepMax;
    bindPeer(*r.recv, me, peer, false, t->proxied);
    *r.transportName = t->name;
    chosen[k] = t;
    CC_CHECK(bootstrap.send(r.peer, r.tag, &desc, sizeof(desc), deadline));
  }
  // 2. Senders attach and acknowledge.
  for (ConnectRequest& r : requests) {
    if (!r.isSend) continue;
    const PeerInfo& peer = peers[r.peer];
    ConnDesc desc{};
    CC_CHECK(bootstrap.recv(r.peer, r.tag, &desc, sizeof(desc), deadline));
    int count = 0;
    const TransportOps* const* table = transportTable(&count);
    if (desc.transport >= static_cast<uint32_t>(count))
      return CC_ERROR(Status::kInternalError, "rank %d described a connection with unknown transport %u", r.peer,
                      desc.transport);
    const TransportOps* t = table[desc.transport];
    CC_CHECK(t->attachFifo(desc, me, peer, setup, r.mem));
    const FifoLayout layout{desc.simpleStepBytes, desc.llStepLines};
    if (desc.simpleStepMax == 0 || desc.simpleStepMax > desc.simpleStepBytes || desc.simpleStepMax % 64 != 0)
      return CC_ERROR(Status::kInternalError, "rank %d described Simple steps of %u bytes in slots of %llu", r.peer,
                      desc.simpleStepMax, static_cast<unsigned long long>(desc.simpleStepBytes));
    bindFifo(*r.send, (*r.mem)->base(), layout);
    r.send->simpleStepMax = desc.simpleStepMax;
    bindPeer(*r.send, me, peer, true, t->proxied);
    *r.transportName = t->name;
    const uint8_t ack = 1;
    CC_CHECK(bootstrap.send(r.peer, r.tag | kAckTagBit, &ack, sizeof(ack), deadline));
  }
  // 3. Receivers learn that their senders hold the FIFO.
  for (size_t k = 0; k < requests.size(); ++k) {
    ConnectRequest& r = requests[k];
    if (r.isSend) continue;
    uint8_t ack = 0;
    CC_CHECK(bootstrap.recv(r.peer, r.tag | kAckTagBit, &ack, sizeof(ack), deadline));
    if (chosen[k]->senderAttached != nullptr) CC_CHECK(chosen[k]->senderAttached(**r.mem, peers[r.peer], setup));
  }
  return kOk;
}

}  // namespace collcomm::detail
