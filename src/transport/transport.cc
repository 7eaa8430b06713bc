// The table of built-in transports, in order of preference: same process, same host, network.
#include "transport/transport.h"

namespace collcomm::detail {

namespace {
const TransportOps* const kTable[] = {&kP2pTransport, &kShmTransport, &kNetTransport};
}

const TransportOps* const* transportTable(int* count) {
  *count = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace collcomm::detail
