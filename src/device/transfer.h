// One point-to-point transfer as executors take it: plain data, shared by core (which fills it),
// the host executor and device code (collectives/p2p.h runs batches of them). No CUDA header.
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

}  // namespace collcomm::detail
