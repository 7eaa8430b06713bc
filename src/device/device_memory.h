// Device memory for the memory calls of the API (core/api_mem.cc): made by the CUDA build
// (device/cuda/cuda_memory.cc), answered "none" by a build without CUDA (device/cuda_absent.cc).
// Control tier: called from the API, never from an operation.
#pragma once

#include <cstddef>

#include "common/status.h"

namespace collcomm::detail {

// ccMemAlloc's device memory: `bytes` of the CUDA device current on the calling thread. Where
// there is none to give (a build without CUDA, no usable device) *ptr is null and the call
// succeeds: the caller gives host memory instead.
Status cudaAllocOnCurrentDevice(size_t bytes, void** ptr);
Status cudaFreeDeviceMemory(void* ptr);
// Whether `ptr` is memory of CUDA device `device` (device or managed memory); false without CUDA.
bool cudaPointerIsOnDevice(const void* ptr, int device);

}  // namespace collcomm::detail
