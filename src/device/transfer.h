// One point-to-point transfer as executors take it, and a rank's connections to one peer: plain
// data, shared by core (which fills them), the executors and device code (collectives/p2p.h runs
// batches of transfers; the one-shot and Direct algorithms build theirs over per-peer
// connections). No CUDA header.
#pragma once

#include <cstddef>

#include "device/fifo.h"

namespace collcomm::detail {

// One point-to-point transfer of a batch, its connection made by core. Transfers to (or from) the
// same peer complete in order; transfers with different peers progress together, so a batch that
// both sends to and receives from every peer cannot deadlock. Self transfers pair the i-th send
// with the i-th receive.
struct ExecTransfer {
  bool isSend;
  int peer;
  void* buf;
  size_t bytes;
  SendConn* send;   // isSend, peer != self
  RecvConn* recv;   // !isSend, peer != self
  size_t done = 0;  // the executor's progress: 0 when handed over
};

// This rank's connections to one peer for the algorithms that talk to every peer (one-shot
// AllReduce on more than two ranks, Direct). Core makes them before handing over such a
// collective (ExecColl::peers).
struct ExecPeerConn {
  SendConn* send;
  RecvConn* recv;
};

}  // namespace collcomm::detail
