// The table of built-in transports, in order of preference: GPUs of one process, GPUs of one host,
// same process, same host, network.
#include "transport/transport.h"

namespace collcomm::detail {

namespace {
const TransportOps* const kTable[] = {
#if CC_HAVE_CUDA
    &kCudaP2pTransport, &kCudaIpcTransport,
#endif
    &kP2pTransport, &kShmTransport, &kNetTransport};
}

const TransportOps* const* transportTable(int* count) {
  *count = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace collcomm::detail
