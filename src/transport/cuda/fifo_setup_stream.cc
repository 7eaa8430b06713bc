// The stream the CUDA transports clear their FIFOs on (see fifo_setup_stream.h).
#include "transport/cuda/fifo_setup_stream.h"

#include <mutex>

namespace collcomm::detail {

cudaError_t fifoSetupStream(int device, cudaStream_t* out) {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static cudaStream_t streams[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  std::lock_guard<std::mutex> lock(mu);
  if (streams[device] == nullptr) {
    const cudaError_t err = cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking);
    if (err != cudaSuccess) return err;
  }
  *out = streams[device];
  return cudaSuccess;
}

}  // namespace collcomm::detail
