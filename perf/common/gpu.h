// The perf binaries' only contact with CUDA (--gpu): device buffers, one stream per rank thread,
// copies between host staging memory and the device, and waiting for a stream. gpu.cc implements it
// with the CUDA runtime in builds with CUDA; gpu_none.cc, in builds without, fails every call with
// a sentence, so the runner has no #ifdefs. Every function returns false and leaves a sentence in
// *error on failure; the runner turns that into fatal().
#pragma once

#include <cstddef>
#include <string>

#include "collcomm.h"

namespace collcomm::perf::gpu {

// Whether this build can run on a GPU at all (false: gpu_none.cc).
bool built();

// Checks that CUDA device `ordinal` exists and can be used. Main thread, before any rank exists.
// *description: "NVIDIA H100 80GB HBM3 (sm_90)", for the report.
bool probe(int ordinal, std::string* description, std::string* error);

// Makes `ordinal` the calling thread's current device (CUDA's current device is per thread).
bool bind(int ordinal, std::string* error);

// Zeroed device memory on the calling thread's device; free with release().
bool allocate(size_t bytes, void** ptr, std::string* error);
void release(void* ptr);

// A non-blocking stream on the calling thread's device; destroy with destroyStream().
bool makeStream(ccStream_t* stream, std::string* error);
void destroyStream(ccStream_t stream);

// Waits for everything enqueued on the stream (the null stream: the legacy default stream).
bool sync(ccStream_t stream, std::string* error);

// Copies between pageable host memory and device memory, ordered on `stream` (after what was
// enqueued there before, before what comes after) and complete when they return.
bool toDevice(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error);
bool toHost(void* dst, const void* src, size_t bytes, ccStream_t stream, std::string* error);

}  // namespace collcomm::perf::gpu
