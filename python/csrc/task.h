// One operation of a process group as it runs: its collcomm calls, made against a Target.
#pragma once

#include <functional>

#include "collcomm.h"

namespace collcomm_torch {

// Where an operation's collcomm calls go: the host communicator with no stream for CPU tensors (on
// the group's worker), or the tensors' GPU's communicator and the group's stream there (gpu_path.h).
struct Target {
  ccComm_t comm = nullptr;
  ccStream_t stream = nullptr;
};

// `issue` makes the collcomm calls (it may run between ccGroupStart and ccGroupEnd when
// coalesced), then `finish` copies results into tensors that were not contiguous. Either may
// throw. For CUDA tensors both run on the caller's thread with the group's stream current, so the
// copies they make are ordered with the calls; the Task is kept until the stream has run it, so
// every tensor its lambdas still hold outlives the GPU's use of it. What `finish` releases early
// (a send's staging copy, a PreMulSum's factor) was allocated on the group's stream, where the
// caching allocator hands it out again only in that stream's order.
struct Task {
  std::function<void(const Target& on)> issue;
  std::function<void()> finish;
};

}  // namespace collcomm_torch
