// What the GPU tests share: whether device 0 is usable (and the skip when it is not), CUDA's
// hardware queues for ranks sharing the GPU, and assertion helpers. Builds with CUDA only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#include "collcomm.h"

namespace collcomm::test {

// Up to 8 ranks share the GPU here, each with its kernels on its own stream, and those kernels
// wait for each other: with CUDA's default of 8 hardware queues two streams may share one, and a
// kernel queued behind a spinning peer would wait for the deadline. Set before CUDA starts.
[[maybe_unused]] inline const bool kEnoughHardwareQueues = setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0) == 0;

// Why GPU tests cannot run here, or "" when device 0 is usable.
inline std::string noGpuReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device";
  return "";
}

}  // namespace collcomm::test

#define SKIP_WITHOUT_GPU()                                                   \
  do {                                                                       \
    const std::string why = ::collcomm::test::noGpuReason();                 \
    if (!why.empty()) GTEST_SKIP() << "SKIPPED: " << why;                    \
  } while (0)

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
#define CC_OK(call) ASSERT_EQ((call), ccSuccess) << #call << ": " << ccGetLastError(nullptr)
