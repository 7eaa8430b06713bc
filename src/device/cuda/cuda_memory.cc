// The CUDA side of ccMemAlloc, ccMemFree and ccCommRegister (device/device_memory.h): device memory
// of the caller's current device, and which device a pointer's memory belongs to.
#include <cuda_runtime.h>

#include "device/device_memory.h"

namespace collcomm::detail {

Status cudaAllocOnCurrentDevice(size_t bytes, void** ptr) {
  *ptr = nullptr;
  int count = 0, device = -1;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();  // no usable device: the caller gives host memory
    return kOk;
  }
  const cudaError_t err = cudaMalloc(ptr, bytes);
  if (err != cudaSuccess) {
    *ptr = nullptr;
    (void)cudaGetLastError();
    return CC_ERROR(Status::kCudaError, "ccMemAlloc: %zu bytes on CUDA device %d: cudaMalloc failed: %s", bytes,
                    device, cudaGetErrorString(err));
  }
  return kOk;
}

Status cudaFreeDeviceMemory(void* ptr) {
  const cudaError_t err = cudaFree(ptr);
  if (err == cudaSuccess) return kOk;
  (void)cudaGetLastError();
  return CC_ERROR(Status::kCudaError, "ccMemFree(%p): cudaFree failed: %s", ptr, cudaGetErrorString(err));
}

bool cudaPointerIsOnDevice(const void* ptr, int device) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) && attr.device == device;
}

}  // namespace collcomm::detail
