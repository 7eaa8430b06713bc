// A collcomm group (ccGroupStart/ccGroupEnd) around a C++ scope.
#pragma once

#include "collcomm.h"

namespace collcomm_torch {

// ccGroupStart/ccGroupEnd around a scope: the group is closed even when a call inside it throws,
// so this thread's group state never leaks into the next operation.
class GroupScope {
 public:
  GroupScope() : started_(ccGroupStart() == ccSuccess) {}
  ~GroupScope() {
    if (started_) (void)ccGroupEnd();
  }
  ccResult_t end() {
    started_ = false;
    return ccGroupEnd();
  }

 private:
  bool started_;
};

}  // namespace collcomm_torch
