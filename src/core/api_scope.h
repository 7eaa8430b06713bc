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

// What both scopes share: the per-thread error cleared on entry, the communicator (null unless it
// was live on entry), and the failure's sentence copied to it on the way out.
class CallScope {
 public:
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  ccResult_t finish(Status s) {
    if (!isOk(s) && comm_ != nullptr) comm_->lastError = threadLastError();
    return toResult(s);
  }

 protected:
  explicit CallScope(ccComm* comm) : comm_(comm != nullptr && comm->magic == kCommMagic ? comm : nullptr) {
    clearThreadLastError();
  }
  ~CallScope() = default;
  ccComm* comm_;
};

class ApiScope : public CallScope {
 public:
  explicit ApiScope(ccComm* comm) : CallScope(comm) {
    if (comm_ != nullptr) comm_->busy.fetch_add(1);
  }
  ~ApiScope() {
    if (comm_ != nullptr) comm_->busy.fetch_sub(1);
  }
};

// The operations' entry points (ccAllReduce, ccSend, ...): as ApiScope, but the communicator is
// marked busy without a locked instruction (see asymmetric_fence.h): opsBusy is written only by
// the thread running the communicator's operations (operations on one communicator never run on
// two threads at once), and ccCommAbort fences for both sides before it reads it.
class OpScope : public CallScope {
 public:
  explicit OpScope(ccComm* comm) : CallScope(comm) {
    if (comm_ == nullptr) return;
    comm_->opsBusy.store(comm_->opsBusy.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    lightFence(comm_->asymmetricFence);  // before the operation reads abortFlag
  }
  ~OpScope() {
    // Release: everything the operation did to the communicator comes before "left".
    if (comm_ != nullptr)
      comm_->opsBusy.store(comm_->opsBusy.load(std::memory_order_relaxed) - 1, std::memory_order_release);
  }
};

}  // namespace collcomm::detail
