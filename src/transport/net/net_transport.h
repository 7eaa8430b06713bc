// The NET transport's ops, shared by its two tables: kNetTransport (host ranks; the FIFO block in
// ordinary memory) and, in CUDA builds, kCudaNetTransport (GPU ranks on different hosts; the block
// in pinned host memory the kernels reach, transport/cuda/cuda_net_transport.cc). Both move steps
// with the same proxy code (net_transport.cc); only where the block lives differs.
#pragma once

#include <cstddef>
#include <memory>

#include "common/status.h"
#include "transport/transport.h"

namespace collcomm::detail {

// Where a NET connection's FIFO block lives, for a rank on `device` (-1: a host rank). allocate
// returns kFifoAlign-aligned memory (not yet cleared) or a sentence; release frees it. Both run on
// the communicator's control thread.
struct NetBlockMemory {
  Status (*allocate)(size_t bytes, int device, void** block);
  void (*release)(void* block, int device);
};

bool netCanConnect(const PeerInfo& self, const PeerInfo& peer);
size_t netStepMaxBytes(const FifoLayout& layout);
Status netCreateFifoIn(const NetBlockMemory& memory, const FifoLayout& layout, const PeerInfo& self,
                       const PeerInfo& peer, const ConnSetup& setup, std::unique_ptr<FifoMemory>* mem, ConnDesc* desc);
Status netAttachFifoIn(const NetBlockMemory& memory, const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer,
                       const ConnSetup& setup, std::unique_ptr<FifoMemory>* mem);
Status netSenderAttached(FifoMemory& mem, const PeerInfo& peer, const ConnSetup& setup);

}  // namespace collcomm::detail
