// NET for GPU ranks: ranks on different hosts (or GPU ranks of one host with
// COLLCOMM_P2P_DISABLE=1). The FIFO block is pinned host memory mapped into the device at the same
// address in both (cuMem host memory where the driver has it, else cudaHostAlloc under unified
// addressing): the kernels publish their steps into it over PCIe, as they would into a peer's
// device memory, and the proxy thread moves them to the network exactly as for host ranks
// (net_transport.cc). No GPU memory is registered with the network, so any backend carries it;
// reading GPU buffers straight from the NIC (GPUDirect RDMA) is not built.
#include <cuda_runtime.h>

#include <mutex>
#include <unordered_map>

#include "common/log.h"
#include "common/params.h"
#include "device/executor.h"
#include "transport/cuda/cuda_vmm.h"
#include "transport/net/net_transport.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

// The blocks made with cuMem (vmmAllocateHost), by address: their release needs the handle.
std::mutex vmmBlocksMu;
std::unordered_map<void*, VmmRange> vmmBlocks;

Status pinnedAllocate(size_t bytes, int device, void** block) {
  ScopedDevice on(device);
  // cuMem host memory where the driver has it: FIFOs made on first use, while a peer's kernel may
  // spin on this rank, must not come from cudaHostAlloc, which CUDA may synchronise with it.
  if (paramInt(Param::kCuMemHostEnable) != 0 && vmmHostSupported(device)) {
    VmmRange range;
    if (isOk(vmmAllocateHost(device, bytes, &range))) {
      std::lock_guard<std::mutex> lock(vmmBlocksMu);
      vmmBlocks[range.ptr] = range;
      *block = range.ptr;
      return kOk;
    }
    vmmHostFailed(device);
    CC_INFO(kSubsysNet, "NET FIFO in cuMem host memory failed (%s); using cudaHostAlloc from now on",
            threadLastError().c_str());
    clearThreadLastError();
  }
  void* host = nullptr;
  // Portable: every device of the process reaches it (a communicator's ranks may be on several).
  cudaError_t err = cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError,
                    "allocating a %zu-byte NET FIFO in pinned host memory for CUDA device %d failed: %s", bytes, device,
                    cudaGetErrorString(err));
  }
  // The kernels are handed the block's host address: it must be the device's address too.
  void* mapped = nullptr;
  err = cudaHostGetDevicePointer(&mapped, host, 0);
  if (err != cudaSuccess || mapped != host) {
    (void)cudaGetLastError();
    (void)cudaFreeHost(host);
    return CC_ERROR(Status::kCudaError,
                    "CUDA device %d does not see pinned host memory at its host address (%s): NET for GPU ranks needs "
                    "unified addressing",
                    device, err != cudaSuccess ? cudaGetErrorString(err) : "another address");
  }
  *block = host;
  return kOk;
}

void pinnedRelease(void* block, int device) {
  ScopedDevice on(device);
  {
    std::lock_guard<std::mutex> lock(vmmBlocksMu);
    if (auto it = vmmBlocks.find(block); it != vmmBlocks.end()) {
      vmmRelease(&it->second);
      vmmBlocks.erase(it);
      return;
    }
  }
  (void)cudaFreeHost(block);
  (void)cudaGetLastError();
}

constexpr NetBlockMemory kPinnedBlocks{pinnedAllocate, pinnedRelease};

Status cudaNetCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                         std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  return netCreateFifoIn(kPinnedBlocks, layout, self, peer, setup, mem, desc);
}

Status cudaNetAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                         std::unique_ptr<FifoMemory>* mem) {
  return netAttachFifoIn(kPinnedBlocks, desc, self, peer, setup, mem);
}

}  // namespace

const TransportOps kCudaNetTransport = {
    .name = kNetTransportName,
    .canConnect = netCanConnect,
    .createFifo = cudaNetCreateFifo,
    .attachFifo = cudaNetAttachFifo,
    .senderAttached = netSenderAttached,
    .stepMaxBytes = netStepMaxBytes,
    .proxied = true,
    .deviceFifo = true,
};

}  // namespace collcomm::detail
