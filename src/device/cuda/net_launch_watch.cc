// Launches that may use NET, watched until they finish (see net_launch_watch.h).
#include "device/cuda/net_launch_watch.h"

#include "device/cuda/cuda_check.h"
#include "device/executor.h"

namespace collcomm::detail {

NetLaunchWatch::~NetLaunchWatch() {
  // First out of the proxy's rounds, which take mu_: then nothing else touches what follows.
  if (registered_) proxyRemove(this);
  if (pending_.empty() && spare_.empty()) return;
  ScopedDevice on(device_);  // the events' device, whatever thread destroys the communicator
  for (Pending& p : pending_) (void)cudaEventDestroy(p.event);
  for (cudaEvent_t e : spare_) (void)cudaEventDestroy(e);
}

Status NetLaunchWatch::launched(cudaStream_t stream) {
  if (!registered_) {
    proxyAdd(this);
    registered_ = true;
  }
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CC_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) {
    if (captured_ == nullptr) captured_ = std::make_unique<ProxyActivity>(commOps_);
    return kOk;
  }
  // Made before taking mu_: it may take the proxy's lock to wake it, and the proxy's round holds
  // that lock while it takes mu_ (progress).
  auto activity = std::make_unique<ProxyActivity>(commOps_);
  std::lock_guard<std::mutex> lock(mu_);
  cudaEvent_t event = nullptr;
  if (!spare_.empty()) {
    event = spare_.back();
    spare_.pop_back();
  } else {
    CC_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  const cudaError_t err = cudaEventRecord(event, stream);
  if (err != cudaSuccess) {
    spare_.push_back(event);
    return cudaFailed(err, "recording the end of a NET launch (cudaEventRecord)");
  }
  pending_.push_back({event, std::move(activity)});
  return kOk;
}

bool NetLaunchWatch::progress() {
  std::lock_guard<std::mutex> lock(mu_);
  // No CUDA call while nothing is pending: the proxy thread serves host communicators too, and a
  // runtime call on a thread without a current device makes a context on device 0.
  if (pending_.empty()) return false;
  ScopedDevice on(device_);
  // A user thread may be capturing a stream in global mode (CUDA's default, and PyTorch's), which
  // forbids other threads' "unsafe" calls, an event query among them, and invalidates the capture.
  // These events are never recorded into a capture, so relaxed mode is right for this thread.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  bool ended = false;
  for (size_t i = 0; i < pending_.size();) {
    // Launches of several streams may end out of order: every one is asked. A failed kernel ends
    // its activity too (its failure reaches the user through the executor's status word), and so
    // does a query that fails: its error is cleared, not left for the user's next CUDA call.
    const cudaError_t err = cudaEventQuery(pending_[i].event);
    if (err == cudaErrorNotReady) {
      ++i;
      continue;
    }
    if (err != cudaSuccess) (void)cudaGetLastError();
    spare_.push_back(pending_[i].event);
    pending_[i] = std::move(pending_.back());
    pending_.pop_back();
    ended = true;
  }
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
  return ended;
}

}  // namespace collcomm::detail
