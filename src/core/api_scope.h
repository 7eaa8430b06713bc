// What every extern "C" entry point does around its one internal call: start with a clean
// per-thread error, keep the communicator marked busy (ccCommAbort waits for busy calls to leave),
// and copy a failure's sentence to the communicator for ccGetLastError(comm).
#pragma once

#include <atomic>

#include "collcomm.h"
#include "common/asymmetric_fence.h"
#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

class ApiScope {
 public:
  explicit ApiScope(ccComm* comm) : comm_(comm) {
    clearThreadLastError();
    if (live()) comm_->busy.fetch_add(1);
    else comm_ = nullptr;
  }
  ~ApiScope() {
    if (comm_ != nullptr) comm_->busy.fetch_sub(1);
  }
  ApiScope(const ApiScope&) = delete;
  ApiScope& operator=(const ApiScope&) = delete;

  ccResult_t finish(Status s) {
    if (!isOk(s) && comm_ != nullptr) comm_->lastError = threadLastError();
    return toResult(s);
  }

 private:
  bool live() const { return comm_ != nullptr && comm_->magic == kCommMagic; }
  ccComm* comm_;
};

// The operations' entry points (ccAllReduce, ccSend, ...): as ApiScope, but the communicator is
// marked busy without a locked instruction (see asymmetric_fence.h): opsBusy is written only by
// the thread running the communicator's operations (operations on one communicator never run on
// two threads at once), and ccCommAbort fences for both sides before it reads it.
class OpScope {
 public:
  explicit OpScope(ccComm* comm) : comm_(comm) {
    clearThreadLastError();
    if (comm_ == nullptr || comm_->magic != kCommMagic) {
      comm_ = nullptr;
      return;
    }
    comm_->opsBusy.store(comm_->opsBusy.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    lightFence(comm_->asymmetricFence);  // before the operation reads abortFlag
  }
  ~OpScope() {
    // Release: everything the operation did to the communicator comes before "left".
    if (comm_ != nullptr)
      comm_->opsBusy.store(comm_->opsBusy.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  ccResult_t finish(Status s) {
    if (!isOk(s) && comm_ != nullptr) comm_->lastError = threadLastError();
    return toResult(s);
  }

 private:
  ccComm* comm_;
};

}  // namespace collcomm::detail
