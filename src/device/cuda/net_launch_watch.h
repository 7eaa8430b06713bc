// Keeps the process's proxy thread awake while a GPU communicator's kernels may use its NET
// connections. A host communicator's operation marks itself running for as long as its call lasts
// (ProxyActivity); a GPU communicator's call returns once the kernel is enqueued, and the kernel
// runs later. So each launch that may use NET holds a ProxyActivity until an event recorded after
// it on its stream completes, which the proxy thread itself checks in its rounds (this is one of its
// clients). A launch captured into a CUDA graph runs at every replay, unseen by the host: after the
// first, the communicator counts as running for the rest of its life (the proxy polls, as for an
// operation in flight).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "proxy/proxy.h"

namespace collcomm::detail {

class NetLaunchWatch final : public ProxyClient {
 public:
  // `commOps`: the communicator's count of running operations over NET (ccComm::netOpsRunning);
  // `device`: the CUDA device the launches run on (the proxy thread queries their events there).
  NetLaunchWatch(std::atomic<int>* commOps, int device) : commOps_(commOps), device_(device) {}
  ~NetLaunchWatch() override;
  NetLaunchWatch(const NetLaunchWatch&) = delete;
  NetLaunchWatch& operator=(const NetLaunchWatch&) = delete;

  // After a kernel that may use NET connections was enqueued on `stream`. Control tier: called by
  // one launching thread at a time (the executor's launch lock).
  Status launched(cudaStream_t stream);

  // Proxy thread: ends the activity of every launch whose event completed; true if one did.
  bool progress() override;
  bool hasWork() const override { return false; }  // the activities keep the proxy awake

 private:
  struct Pending {
    cudaEvent_t event;
    std::unique_ptr<ProxyActivity> activity;
  };

  std::atomic<int>* const commOps_;
  const int device_;
  bool registered_ = false;                  // with the proxy (at the first launch)
  std::unique_ptr<ProxyActivity> captured_;  // held from the first captured launch on
  std::mutex mu_;                            // what follows: the launching thread and the proxy's
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> spare_;  // completed events, recorded again by later launches
};

}  // namespace collcomm::detail
