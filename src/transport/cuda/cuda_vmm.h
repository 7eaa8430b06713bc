// Device memory from CUDA's virtual memory management (cuMem*), exportable to other processes as a
// POSIX file descriptor: the CUDA IPC transport's FIFOs where the device supports it. Unlike
// cudaMalloc, making and mapping it is not among the calls CUDA may synchronise with kernels
// already running, where a peer's kernel may spin on this rank. The driver's entry points are
// looked up through the runtime (cudaGetDriverEntryPointByVersion): the library links no libcuda.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace collcomm::detail {

// One mapping of a cuMem allocation in this process.
struct VmmRange {
  void* ptr = nullptr;
  size_t bytes = 0;     // as mapped: the request rounded up to the allocation granularity
  uint64_t handle = 0;  // CUmemGenericAllocationHandle
};

// Whether `device` makes cuMem allocations exportable as file descriptors (cached per device;
// false where the driver lacks an entry point).
bool vmmExportable(int device);
// An allocation of at least `bytes` on `device` (not cleared), mapped read-write for it, and a file
// descriptor naming it for other processes (*exportFd, the caller's to close).
Status vmmAllocate(int device, size_t bytes, VmmRange* out, int* exportFd);
// Maps the allocation another process exported as `fd` (`bytes` as that side mapped it) into this
// process, read-write for `device` (the peer's own device or another with peer access).
Status vmmImport(int fd, size_t bytes, int device, VmmRange* out);
// Whether cuMem allocations in host memory are to be made for `device`: the device supports them
// (CUDA 12.2 and later), the driver is 12.6 or later, and none has failed for it (vmmHostFailed).
bool vmmHostSupported(int device);
// A host allocation for `device` failed: vmmHostSupported says false from now on, so that every
// later FIFO goes straight to the fallback.
void vmmHostFailed(int device);
// Pinned host memory of at least `bytes` on the host NUMA node nearest `device` (not cleared),
// read-write for the CPU and for `device`, at one address for both: what cudaHostAlloc gives,
// without being among the calls CUDA may synchronise with kernels already running.
Status vmmAllocateHost(int device, size_t bytes, VmmRange* out);
// Unmaps and releases this process's share; the memory goes when every process released it.
void vmmRelease(VmmRange* range);

}  // namespace collcomm::detail
