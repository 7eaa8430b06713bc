// The comms of one test connection of a net backend (transport/net/net.h), closed when the test
// ends however it ends. Ops: the backend's accessor (socketNet, ofiNet).
#pragma once

#include "transport/net/net.h"

namespace collcomm::test {

template <const detail::NetOpsV1& (*Ops)()>
struct NetPair {
  void* send = nullptr;
  void* recv = nullptr;
  void* listen = nullptr;
  ~NetPair() {
    const detail::NetOpsV1& n = Ops();
    if (send != nullptr) (void)n.closeSend(send);
    if (recv != nullptr) (void)n.closeRecv(recv);
    if (listen != nullptr) (void)n.closeListen(listen);
  }
};

}  // namespace collcomm::test
