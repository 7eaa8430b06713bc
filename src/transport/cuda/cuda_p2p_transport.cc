// CUDA P2P transport: GPU ranks that are threads of one process. The FIFO lives in the
// receiver's device memory (peer access enabled when the sender runs on another device), or, where
// the sender's device cannot reach it, in pinned host memory mapped into both devices. As in the
// host P2P transport, the two sides hold a reference each and the last one out frees the block.
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "common/params.h"
#include "device/executor.h"
#include "transport/cuda/fifo_setup_stream.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

struct CudaBlock {
  std::atomic<int> refs{2};  // one per side, taken at creation (see p2p_transport.cc)
  void* base = nullptr;      // device address of the FIFO block
  bool hostMemory = false;   // pinned host memory rather than device memory
  int device = -1;           // the device it was allocated on
};

struct CudaDescData {
  uint64_t processToken;
  uint64_t block;  // CudaBlock*
};
static_assert(sizeof(CudaDescData) <= sizeof(ConnDesc::data));

void release(CudaBlock* b) {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  ScopedDevice on(b->device);
  if (b->hostMemory) (void)cudaFreeHost(b->base);
  else (void)cudaFree(b->base);
  delete b;
}

class CudaFifoMemory final : public FifoMemory {
 public:
  explicit CudaFifoMemory(CudaBlock* block) : block_(block) {}
  ~CudaFifoMemory() override { release(block_); }
  void* base() override { return block_->base; }

 private:
  CudaBlock* block_;
};

bool cudaCanConnect(const PeerInfo& self, const PeerInfo& peer) {
  return self.device >= 0 && peer.device >= 0 && self.processToken == peer.processToken &&
         paramInt(Param::kP2pDisable) == 0;
}

// The pool device FIFOs come from, one per device for the process, made at the first FIFO (a
// communicator's init): FIFOs made later (point-to-point and per-peer connections, made on first
// use) are allocated in stream order, since a peer's kernel may already spin on this rank and a
// plain cudaMalloc may order this rank's next launch behind that kernel (CUDA's implicit
// synchronisation). A pool of its own, so that the access granted to peer devices is not granted
// to the application's default pool. Called with the device current.
cudaError_t fifoPool(int device, int peerDevice, cudaMemPool_t* out) {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static cudaMemPool_t pools[kMaxDevices] = {};
  static uint64_t peersGranted[kMaxDevices] = {};  // bit p: device p may read and write the pool
  if (device < 0 || device >= kMaxDevices || peerDevice < 0 || peerDevice >= kMaxDevices)
    return cudaErrorInvalidDevice;
  std::lock_guard<std::mutex> lock(mu);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    const cudaError_t err = cudaMemPoolCreate(&pools[device], &props);
    if (err != cudaSuccess) return err;
  }
  if (peerDevice != device && (peersGranted[device] >> peerDevice & 1) == 0) {
    cudaMemAccessDesc access{};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = peerDevice;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    const cudaError_t err = cudaMemPoolSetAccess(pools[device], &access, 1);
    if (err != cudaSuccess) return err;
    peersGranted[device] |= uint64_t{1} << peerDevice;
  }
  *out = pools[device];
  return cudaSuccess;
}

// Whether the sender's device can write the receiver's device memory.
bool reaches(int senderDevice, int receiverDevice) {
  if (senderDevice == receiverDevice) return true;
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, senderDevice, receiverDevice) == cudaSuccess && can != 0;
}

Status cudaCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                      std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  const size_t bytes = layout.totalBytes();
  ScopedDevice on(self.device);
  auto* block = new CudaBlock;
  block->device = self.device;
  block->hostMemory = !reaches(peer.device, self.device);
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  cudaError_t err = cudaSuccess;
  if (block->hostMemory) {
    err = cudaHostAlloc(&block->base, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  } else {
    err = fifoSetupStream(self.device, &stream);
    if (err == cudaSuccess) err = fifoPool(self.device, peer.device, &pool);
    if (err == cudaSuccess) err = cudaMallocFromPoolAsync(&block->base, bytes, pool, stream);
  }
  if (err != cudaSuccess) {
    delete block;
    return CC_ERROR(Status::kCudaError, "allocating the %zu-byte FIFO from rank %d on CUDA device %d failed: %s",
                    bytes, peer.rank, self.device, cudaGetErrorString(err));
  }
  if (block->hostMemory) {
    memset(block->base, 0, bytes);
  } else {
    // On a stream of its own: a blocking memset would wait for every kernel on the device,
    // including other communicators' kernels spinning on their peers.
    err = cudaMemsetAsync(block->base, 0, bytes, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  }
  if (err != cudaSuccess) {
    block->refs.store(1);
    release(block);
    return CC_ERROR(Status::kCudaError, "clearing the FIFO from rank %d on CUDA device %d failed: %s", peer.rank,
                    self.device, cudaGetErrorString(err));
  }
  *mem = std::make_unique<CudaFifoMemory>(block);
  CudaDescData data{peer.processToken, reinterpret_cast<uint64_t>(block)};
  memset(desc, 0, sizeof(*desc));
  desc->bytes = bytes;
  memcpy(desc->data, &data, sizeof(data));
  return kOk;
}

Status cudaAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                      std::unique_ptr<FifoMemory>* mem) {
  CudaDescData data;
  memcpy(&data, desc.data, sizeof(data));
  if (data.processToken != self.processToken)
    return CC_ERROR(Status::kInternalError, "CUDA P2P connection description from rank %d names another process",
                    peer.rank);
  auto* block = reinterpret_cast<CudaBlock*>(data.block);
  *mem = std::make_unique<CudaFifoMemory>(block);
  if (!block->hostMemory && block->device != self.device) {
    ScopedDevice on(self.device);
    const cudaError_t err = cudaDeviceEnablePeerAccess(block->device, 0);
    if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled)
      return CC_ERROR(Status::kCudaError, "enabling access from CUDA device %d to device %d (rank %d's) failed: %s",
                      self.device, block->device, peer.rank, cudaGetErrorString(err));
    (void)cudaGetLastError();  // AlreadyEnabled is no failure
  }
  return kOk;
}

}  // namespace

const TransportOps kCudaP2pTransport = {
    .name = "CUDA_P2P",
    .canConnect = cudaCanConnect,
    .createFifo = cudaCreateFifo,
    .attachFifo = cudaAttachFifo,
    .senderAttached = nullptr,
    .stepMaxBytes = nullptr,
    .proxied = false,
    .deviceFifo = true,
};

}  // namespace collcomm::detail
