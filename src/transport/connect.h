// Connection setup between ranks, in step with the peers: the receiving side of each connection
// picks the transport, creates the FIFO and sends its description over the bootstrap; the sending
// side attaches and acknowledges; then the receiver drops any name others could still open.
// Setup tier; blocks until the deadline at most.
#pragma once

#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/deadline.h"
#include "device/fifo.h"
#include "transport/transport.h"

namespace collcomm::detail {

struct ConnectRequest {
  int peer;
  bool isSend;
  uint64_t tag;  // the same on both sides of one connection, unique among the pair's connections
  FifoLayout layout;
  SendConn* send;  // isSend
  RecvConn* recv;  // !isSend
  std::unique_ptr<FifoMemory>* mem;
  const char** transportName;  // set to the transport used
};

// The transport the receiving side `self` picks for a connection from `peer`: the first in
// transportTable() that makes FIFOs of the ranks' kind (device-visible for GPU ranks) and can join
// them; null when none can. *index is its place in the table.
const TransportOps* pickTransport(const PeerInfo& self, const PeerInfo& peer, uint32_t* index);

// Both sides of every connection must be in the peers' calls, in any order.
// `setup` carries the job's secret (NET connections present it), the deadline of every step and
// the communicator's count of running operations.
Status connectPeers(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int self, const ConnSetup& setup,
                    std::vector<ConnectRequest>& requests);

}  // namespace collcomm::detail
