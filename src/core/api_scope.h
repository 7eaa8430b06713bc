// What every extern "C" entry point does around its one internal call: start with a clean
// per-thread error, keep the communicator marked busy (ccCommAbort waits for busy calls to leave),
// and copy a failure's sentence to the communicator for ccGetLastError(comm).
#pragma once

#include "collcomm.h"
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

}  // namespace collcomm::detail
