// gpu.h in builds without CUDA: --gpu is refused with a sentence at startup (probe), so the other
// calls are never reached; they fail the same way in case one is.
#include "common/gpu.h"

namespace collcomm::perf::gpu {
namespace {

bool refuse(std::string* error) {
  *error =
      "this build has no CUDA: --gpu needs collcomm configured with -DCOLLCOMM_CUDA=ON (or AUTO) where nvcc is "
      "installed";
  return false;
}

}  // namespace

bool built() { return false; }
bool probe(int, std::string*, std::string* error) { return refuse(error); }
bool bind(int, std::string* error) { return refuse(error); }
bool allocate(size_t, void** ptr, std::string* error) {
  *ptr = nullptr;
  return refuse(error);
}
void release(void*) {}
bool makeStream(ccStream_t* stream, std::string* error) {
  *stream = nullptr;
  return refuse(error);
}
void destroyStream(ccStream_t) {}
bool sync(ccStream_t, std::string* error) { return refuse(error); }
bool toDevice(void*, const void*, size_t, ccStream_t, std::string* error) { return refuse(error); }
bool toHost(void*, const void*, size_t, ccStream_t, std::string* error) { return refuse(error); }

}  // namespace collcomm::perf::gpu
