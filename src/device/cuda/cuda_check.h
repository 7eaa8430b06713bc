// CC_CUDA_CHECK: return a kCudaError Status naming the failed CUDA runtime call and CUDA's reason.
// For the CUDA executor's host code (compiled with the CUDA runtime's header).
#pragma once

#include <cuda_runtime.h>

#include "common/status.h"

namespace collcomm::detail {

inline Status cudaFailed(cudaError_t err, const char* what) {
  return CC_ERROR(Status::kCudaError, "%s failed: %s", what, cudaGetErrorString(err));
}

}  // namespace collcomm::detail

#define CC_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    const cudaError_t ccCudaErr_ = (call);                                                   \
    if (ccCudaErr_ != cudaSuccess) return ::collcomm::detail::cudaFailed(ccCudaErr_, #call); \
  } while (0)
