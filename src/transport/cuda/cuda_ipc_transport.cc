// CUDA IPC transport: GPU ranks of different processes on one host (distinct GPUs, or one GPU
// under MPS; core/gpu_job.h decides which jobs may run). The FIFO lives in the receiver's device
// memory, allocated on its own (a handle names a whole allocation) and cleared on the setup stream.
// Two ways to share it, told apart in the connection description:
//   - cuMem* memory (cuda_vmm.h), where the device exports it as a file descriptor: the receiver
//     offers the descriptor (common/fd_share.h) and the sender fetches it over a Unix socket and
//     maps it. Made without cudaMalloc, which CUDA may synchronise with kernels already running,
//     where a peer's kernel may spin on this rank (FIFOs made after init, on first use). The offer
//     is withdrawn once the sender holds the memory.
//   - otherwise, or with COLLCOMM_CUMEM_ENABLE=0, cudaMalloc and cudaIpcGetMemHandle.
// The sender's process maps it with access for its own device (peer access where that is
// another). Each side frees only its own share: the sender unmaps, the receiver frees.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>

#include "common/fd_share.h"
#include "common/log.h"
#include "common/params.h"
#include "device/executor.h"
#include "transport/cuda/cuda_vmm.h"
#include "transport/cuda/fifo_setup_stream.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

enum class IpcKind : uint32_t { kRuntimeIpc = 0, kVmm = 1 };

struct IpcDescData {
  IpcKind kind;
  uint32_t pad;
  uint64_t processToken;  // the receiver's process, which the sender must not be
  union {
    cudaIpcMemHandle_t handle;  // kRuntimeIpc
    struct {
      FdTicket ticket;
      uint64_t mappedBytes;  // the allocation as the receiver mapped it (rounded to its granularity)
    } vmm;
  };
};
static_assert(sizeof(IpcDescData) <= sizeof(ConnDesc::data));

// One side's share of a FIFO: the receiver's is the allocation itself, the sender's its mapping of
// it in this process (closed). A cuMem allocation lives until its last mapping goes, so the
// receiver releases its share at once. A runtime-IPC one is not freed: CUDA leaves freeing memory
// that another process still maps undefined, and the sender may still write into it (its kernel,
// after an abort; its leaving words, when it is destroyed later), so it stays with the process.
class IpcFifo final : public FifoMemory {
 public:
  // Runtime IPC: the allocation (owner) or the mapping of a peer's.
  IpcFifo(void* base, int device, bool owner) : base_(base), device_(device), owner_(owner) {}
  // cuMem: this process's mapping; the owner's offer until withdrawn.
  IpcFifo(const VmmRange& range, int device, bool owner, uint64_t offer)
      : base_(range.ptr), device_(device), owner_(owner), vmm_(range), offer_(offer) {}
  ~IpcFifo() override {
    withdrawOffer();
    ScopedDevice on(device_);
    if (vmm_.ptr != nullptr)
      vmmRelease(&vmm_);
    else if (!owner_)
      (void)cudaIpcCloseMemHandle(base_);
    (void)cudaGetLastError();
  }
  void* base() override { return base_; }
  void withdrawOffer() {
    if (offer_ != 0) withdrawFd(offer_);
    offer_ = 0;
  }

 private:
  void* base_;
  int device_;
  bool owner_;
  VmmRange vmm_;
  uint64_t offer_ = 0;  // fd_share's id of the descriptor offered to the sender (0: none)
};

// Whether the sender's GPU (peer) may map memory of the receiver's (self): where this process
// sees both, CUDA says; where it does not see the peer's (CUDA_VISIBLE_DEVICES), the sender's attach
// will, with a sentence. Refused here, the connection goes over the next transport (NET, through
// pinned host memory), as ranks of one process without peer access share host memory.
bool senderMayMap(const PeerInfo& self, const PeerInfo& peer) {
  if (peer.deviceBusId < 0 || peer.deviceBusId == self.deviceBusId) return true;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  for (int d = 0; d < count; ++d) {
    int64_t busId = -1;
    if (!isOk(cudaDeviceBusId(d, &busId))) {
      clearThreadLastError();
      continue;
    }
    if (busId != peer.deviceBusId) continue;
    int can = 0;
    const bool reaches = cudaDeviceCanAccessPeer(&can, d, self.device) == cudaSuccess && can != 0;
    (void)cudaGetLastError();
    if (!reaches)
      CC_INFO(kSubsysInit,
              "CUDA device %d (rank %d's, pid %d) cannot access device %d (rank %d's): no CUDA IPC between them", d,
              peer.rank, peer.pid, self.device, self.rank);
    return reaches;
  }
  return true;
}

bool ipcCanConnect(const PeerInfo& self, const PeerInfo& peer) {
  return self.device >= 0 && peer.device >= 0 && self.processToken != peer.processToken &&
         self.hostHash == peer.hostHash && paramInt(Param::kP2pDisable) == 0 && senderMayMap(self, peer);
}

Status clearOnDevice(void* base, size_t bytes, int device) {
  cudaStream_t stream = nullptr;
  cudaError_t err = fifoSetupStream(device, &stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(base, 0, bytes, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError, "clearing a %zu-byte FIFO on CUDA device %d failed: %s", bytes, device,
                    cudaGetErrorString(err));
  }
  return kOk;
}

// The FIFO as cuMem memory, its descriptor offered to the sender's process.
Status createVmmFifo(size_t bytes, const PeerInfo& self, std::unique_ptr<FifoMemory>* mem, IpcDescData* data) {
  ScopedDevice on(self.device);
  VmmRange range;
  int fd = -1;
  CC_CHECK(vmmAllocate(self.device, bytes, &range, &fd));
  FdTicket ticket;
  const Status offered = offerFd(fd, &ticket);
  close(fd);  // the offer holds its own copy
  if (!isOk(offered)) {
    vmmRelease(&range);
    return offered;
  }
  auto owned = std::make_unique<IpcFifo>(range, self.device, /*owner=*/true, ticket.id);
  CC_CHECK(clearOnDevice(range.ptr, range.bytes, self.device));
  data->kind = IpcKind::kVmm;
  data->vmm.ticket = ticket;
  data->vmm.mappedBytes = range.bytes;
  *mem = std::move(owned);
  return kOk;
}

Status createRuntimeIpcFifo(size_t bytes, const PeerInfo& self, const PeerInfo& peer, std::unique_ptr<FifoMemory>* mem,
                            IpcDescData* data) {
  ScopedDevice on(self.device);
  void* base = nullptr;
  cudaError_t err = cudaMalloc(&base, bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError,
                    "allocating the %zu-byte FIFO from rank %d (pid %d) on CUDA device %d failed: %s", bytes, peer.rank,
                    peer.pid, self.device, cudaGetErrorString(err));
  }
  // Freed here if it fails before any peer can have it; once handed out it stays (IpcFifo).
  Status s = clearOnDevice(base, bytes, self.device);
  if (isOk(s) && (err = cudaIpcGetMemHandle(&data->handle, base)) != cudaSuccess) {
    (void)cudaGetLastError();
    s = CC_ERROR(Status::kCudaError,
                 "making an IPC handle for the FIFO from rank %d (pid %d) on CUDA device %d failed: %s", peer.rank,
                 peer.pid, self.device, cudaGetErrorString(err));
  }
  if (!isOk(s)) {
    (void)cudaFree(base);
    (void)cudaGetLastError();
    return s;
  }
  data->kind = IpcKind::kRuntimeIpc;
  *mem = std::make_unique<IpcFifo>(base, self.device, /*owner=*/true);
  return kOk;
}

Status ipcCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  const size_t bytes = layout.totalBytes();
  IpcDescData data{};
  data.processToken = self.processToken;
  // The receiver alone decides, and the description tells the sender which: a cuMem FIFO that
  // cannot be made here falls back to runtime IPC.
  bool made = false;
  if (paramInt(Param::kCuMemEnable) != 0 && vmmExportable(self.device)) {
    made = isOk(createVmmFifo(bytes, self, mem, &data));
    if (!made) {
      CC_INFO(kSubsysInit, "a cuMem FIFO on CUDA device %d failed (%s); sharing it through cudaIpcGetMemHandle",
              self.device, threadLastError().c_str());
      clearThreadLastError();
    }
  }
  if (!made) CC_CHECK(createRuntimeIpcFifo(bytes, self, peer, mem, &data));
  memset(desc, 0, sizeof(*desc));
  desc->bytes = bytes;
  memcpy(desc->data, &data, sizeof(data));
  return kOk;
}

Status ipcAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                     std::unique_ptr<FifoMemory>* mem) {
  IpcDescData data;
  memcpy(&data, desc.data, sizeof(data));
  if (data.processToken == self.processToken)
    return CC_ERROR(Status::kInternalError, "CUDA IPC connection description from rank %d names this process",
                    peer.rank);
  ScopedDevice on(self.device);
  if (data.kind == IpcKind::kVmm) {
    int fd = -1;
    CC_CHECK(fetchFd(data.vmm.ticket, peer.rank, setup.deadline, &fd));
    VmmRange range;
    const Status s = vmmImport(fd, data.vmm.mappedBytes, self.device, &range);
    close(fd);  // the import holds the memory
    if (!isOk(s))
      return CC_ERROR(Status::kCudaError,
                      "mapping the FIFO of rank %d (host %s, pid %d; its CUDA device %d) for CUDA "
                      "device %d failed: %s (COLLCOMM_CUMEM_ENABLE=0 on every rank shares FIFOs through "
                      "cudaIpcGetMemHandle instead: the receiving rank chooses)",
                      peer.rank, peer.host, peer.pid, peer.device, self.device, threadLastError().c_str());
    *mem = std::make_unique<IpcFifo>(range, self.device, /*owner=*/false, 0);
    return kOk;
  }
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

// The sender holds the memory: nobody else may fetch it.
Status ipcSenderAttached(FifoMemory& mem, const PeerInfo&, const ConnSetup&) {
  static_cast<IpcFifo&>(mem).withdrawOffer();
  return kOk;
}

}  // namespace

const TransportOps kCudaIpcTransport = {
    .name = "CUDA_IPC",
    .canConnect = ipcCanConnect,
    .createFifo = ipcCreateFifo,
    .attachFifo = ipcAttachFifo,
    .senderAttached = ipcSenderAttached,
    .stepMaxBytes = nullptr,
    .proxied = false,
    .deviceFifo = true,
};

}  // namespace collcomm::detail
