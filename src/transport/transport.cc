// The table of built-in transports, in order of preference (connect.cc takes the first that makes
// FIFOs of the ranks' kind and can join them).
#include "transport/transport.h"

namespace collcomm::detail {

namespace {
const TransportOps* const kTable[] = {
#if CC_HAVE_CUDA
    &kCudaP2pTransport,  // GPU ranks of one process
    &kCudaIpcTransport,  // ... of one host
    &kCudaNetTransport,  // ... of different hosts
#endif
    &kP2pTransport,  // host ranks of one process
    &kShmTransport,  // ... of one host
    &kNetTransport,  // ... of different hosts
};
}

const TransportOps* const* transportTable(int* count) {
  *count = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  return kTable;
}

}  // namespace collcomm::detail
