// Test-only stand-in for common/gpu.cc: a "device" whose memory is host memory, so that the perf
// tests can run the --gpu path of the runner (device buffers, a stream per rank, staged fills and
// checks, waits and ccCommGetAsyncError after each loop) on machines without a GPU. Linked only
// into the *_perf_fakegpu binaries, which run under fake_gpu_shim.c. Never installed.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/gpu.h"

namespace collcomm::perf::gpu {
namespace {

// Every rank's stream is this token; the shim checks that operations get it.
ccStream_t token() { return reinterpret_cast<ccStream_t>(static_cast<uintptr_t>(0xcc57)); }

bool onStream(ccStream_t stream, std::string* error) {
  if (stream == token()) return true;
  *error = "fake GPU: a copy on a stream that is not the rank's";
  return false;
}

}  // namespace

bool built() { return true; }

bool probe(int ordinal, std::string* description, std::string* error) {
  if (ordinal != 0) {
    *error = "CUDA device " + std::to_string(ordinal) + " does not exist: this machine has 1 (the fake GPU)";
    return false;
  }
  *description = "fake GPU (host memory)";
  return true;
}

bool bind(int, std::string*) { return true; }

bool allocate(size_t bytes, void** ptr, std::string* error) {
  *ptr = calloc(1, bytes);
  if (*ptr == nullptr) *error = "fake GPU: out of memory";
  return *ptr != nullptr;
}

void release(void* ptr) { free(ptr); }

bool makeStream(ccStream_t* stream, std::string*) {
  *stream = token();
  return true;
}

void destroyStream(ccStream_t) {}

bool sync(ccStream_t, std::string*) { return true; }

bool toDevice(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error) {
  if (!onStream(stream, error)) return false;
  memcpy(dst, src, bytes);
  return true;
}

bool toHost(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error) {
  if (!onStream(stream, error)) return false;
  memcpy(dst, src, bytes);
  return true;
}

}  // namespace collcomm::perf::gpu
