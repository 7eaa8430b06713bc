// CUDA IPC transport: GPU ranks of different processes on one host (distinct GPUs, or one GPU
// under MPS; core/gpu_job.h decides which jobs may run). The FIFO lives in the receiver's device
// memory, allocated on its own (cudaMalloc: an IPC handle names a whole allocation, and the FIFO
// pool's memory cannot be exported this way) and cleared on the setup stream; its IPC handle
// travels in the connection description, and the sender opens it in its process, with peer access
// enabled where its device is another. Each side frees only its own share: the sender closes its
// mapping, the receiver frees the memory. Not yet: an exportable stream-ordered pool (its file
// descriptor passed to the peer process), so that FIFOs made after init, when a peer's kernel may
// already spin on this rank, do not come from cudaMalloc, which CUDA may synchronise.
#include <cuda_runtime.h>

#include <cstring>

#include "device/executor.h"
#include "transport/cuda/fifo_setup_stream.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

struct IpcDescData {
  cudaIpcMemHandle_t handle;
  uint64_t processToken;  // the receiver's process, which the sender must not be
};
static_assert(sizeof(IpcDescData) <= sizeof(ConnDesc::data));

// One side's share of a FIFO: the receiver's is the allocation itself (freed), the sender's its
// mapping of it in this process (closed).
class IpcFifo final : public FifoMemory {
 public:
  IpcFifo(void* base, int device, bool owner) : base_(base), device_(device), owner_(owner) {}
  ~IpcFifo() override {
    ScopedDevice on(device_);
    if (owner_)
      (void)cudaFree(base_);
    else
      (void)cudaIpcCloseMemHandle(base_);
    (void)cudaGetLastError();
  }
  void* base() override { return base_; }

 private:
  void* base_;
  int device_;
  bool owner_;
};

bool ipcCanConnect(const PeerInfo& self, const PeerInfo& peer) {
  return self.device >= 0 && peer.device >= 0 && self.processToken != peer.processToken &&
         self.hostHash == peer.hostHash;
}

Status ipcCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  const size_t bytes = layout.totalBytes();
  ScopedDevice on(self.device);
  void* base = nullptr;
  cudaError_t err = cudaMalloc(&base, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError,
                    "allocating the %zu-byte FIFO from rank %d (pid %d) on CUDA device %d failed: %s", bytes, peer.rank,
                    peer.pid, self.device, cudaGetErrorString(err));
  }
  auto owned = std::make_unique<IpcFifo>(base, self.device, /*owner=*/true);
  cudaStream_t stream = nullptr;
  err = fifoSetupStream(self.device, &stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(base, 0, bytes, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  IpcDescData data{};
  if (err == cudaSuccess) err = cudaIpcGetMemHandle(&data.handle, base);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError, "preparing the FIFO from rank %d (pid %d) on CUDA device %d for it failed: %s",
                    peer.rank, peer.pid, self.device, cudaGetErrorString(err));
  }
  data.processToken = self.processToken;
  memset(desc, 0, sizeof(*desc));
  desc->bytes = bytes;
  memcpy(desc->data, &data, sizeof(data));
  *mem = std::move(owned);
  return kOk;
}

Status ipcAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem) {
  IpcDescData data;
  memcpy(&data, desc.data, sizeof(data));
  if (data.processToken == self.processToken)
    return CC_ERROR(Status::kInternalError, "CUDA IPC connection description from rank %d names this process",
                    peer.rank);
  ScopedDevice on(self.device);
  void* base = nullptr;
  const cudaError_t err = cudaIpcOpenMemHandle(&base, data.handle, cudaIpcMemLazyEnablePeerAccess);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError,
                    "opening the FIFO of rank %d (host %s, pid %d; its CUDA device %d) from CUDA device %d failed: %s "
                    "(can this device reach that one? cudaDeviceCanAccessPeer)",
                    peer.rank, peer.host, peer.pid, peer.device, self.device, cudaGetErrorString(err));
  }
  *mem = std::make_unique<IpcFifo>(base, self.device, /*owner=*/false);
  return kOk;
}

}  // namespace

const TransportOps kCudaIpcTransport = {
    .name = "CUDA_IPC",
    .canConnect = ipcCanConnect,
    .createFifo = ipcCreateFifo,
    .attachFifo = ipcAttachFifo,
    .senderAttached = nullptr,
    .stepMaxBytes = nullptr,
    .proxied = false,
    .deviceFifo = true,
};

}  // namespace collcomm::detail
