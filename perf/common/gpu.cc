// gpu.h with the CUDA runtime: compiled only in builds with CUDA (perf/CMakeLists.txt), as plain
// C++ against cuda_runtime.h and linked to CUDA::cudart.
#include "common/gpu.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace collcomm::perf::gpu {
namespace {

// "cudaMalloc(1073741824 bytes): out of memory (cudaErrorMemoryAllocation)".
bool ok(cudaError_t e, const std::string& what, std::string* error) {
  if (e == cudaSuccess) return true;
  *error = what + ": " + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")";
  return false;
}

cudaStream_t cuda(ccStream_t s) { return reinterpret_cast<cudaStream_t>(s); }

}  // namespace

bool built() { return true; }

bool probe(int ordinal, std::string* description, std::string* error) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *error = std::string("no usable CUDA device: cudaGetDeviceCount failed: ") + cudaGetErrorString(e) + " (" +
             cudaGetErrorName(e) + ")";
    return false;
  }
  if (ordinal < 0 || ordinal >= count) {
    *error = "CUDA device " + std::to_string(ordinal) + " does not exist: this machine has " + std::to_string(count) +
             " (ordinals 0 to " + std::to_string(count - 1) + ")";
    if (count == 0) *error = "CUDA device " + std::to_string(ordinal) + " does not exist: this machine has none";
    return false;
  }
  cudaDeviceProp prop{};
  if (!ok(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties(" + std::to_string(ordinal) + ")", error))
    return false;
  // Touch the device once here, so that a broken driver or a device in exclusive use by another
  // process fails with one message before any rank thread starts.
  if (!ok(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")", error)) return false;
  if (!ok(cudaFree(nullptr), "creating a CUDA context on device " + std::to_string(ordinal), error)) return false;
  char text[320];
  snprintf(text, sizeof(text), "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
  *description = text;
  return true;
}

bool bind(int ordinal, std::string* error) {
  return ok(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")", error);
}

bool allocate(size_t bytes, void** ptr, std::string* error) {
  *ptr = nullptr;
  if (!ok(cudaMalloc(ptr, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)", error)) return false;
  // cudaMemset may finish after it returns, on the legacy stream the ranks' streams do not wait for.
  if (!ok(cudaMemset(*ptr, 0, bytes), "cudaMemset(" + std::to_string(bytes) + " bytes)", error) ||
      !ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cudaMemset", error)) {
    cudaFree(*ptr);
    *ptr = nullptr;
    return false;
  }
  return true;
}

void release(void* ptr) {
  if (ptr != nullptr) cudaFree(ptr);
}

bool makeStream(ccStream_t* stream, std::string* error) {
  cudaStream_t s = nullptr;
  if (!ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", error)) return false;
  *stream = reinterpret_cast<ccStream_t>(s);
  return true;
}

void destroyStream(ccStream_t stream) {
  if (stream != nullptr) cudaStreamDestroy(cuda(stream));
}

bool sync(ccStream_t stream, std::string* error) {
  return ok(cudaStreamSynchronize(cuda(stream)), "cudaStreamSynchronize", error);
}

// cudaMemcpy from pageable memory may return before the data reaches the device, and it is ordered
// on the legacy default stream, which a non-blocking stream does not wait for: copy on the rank's
// stream and wait for it instead.
bool toDevice(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error) {
  const std::string what = "cudaMemcpyAsync(" + std::to_string(bytes) + " bytes, host to device)";
  return ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda(stream)), what, error) &&
         ok(cudaStreamSynchronize(cuda(stream)), what + " then cudaStreamSynchronize", error);
}

bool toHost(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error) {
  const std::string what = "cudaMemcpyAsync(" + std::to_string(bytes) + " bytes, device to host)";
  return ok(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cuda(stream)), what, error) &&
         ok(cudaStreamSynchronize(cuda(stream)), what + " then cudaStreamSynchronize", error);
}

}  // namespace collcomm::perf::gpu
