// The `gpu` scenario of cc_mp_worker: one GPU rank per process (see gpu_ranks.cc).
#pragma once

#include <string>

#include "collcomm.h"

namespace collcomm::test {

// Joins the job as a GPU rank on CUDA device CC_MP_GPU_DEVICE (default 0; "rank": the device
// numbered as the rank), runs AllReduce,
// AllGather and ReduceScatter on device buffers on a stream of its own, and checks every result
// exactly. Returns "" or why it failed; *refusal gets init's sentence where init refused the job
// (the driver decides whether that was the expected outcome). dyingRank >= 0: that rank exits
// (status 9) right after init, and the others' AllReduce must fail naming it (returns "" then).
std::string runGpuRank(const ccUniqueId& id, int rank, int nranks, int dyingRank, std::string* refusal);

// The `gpu-leave` scenario: every rank runs an AllReduce and a 4 MiB Broadcast from the last rank,
// which then destroys its communicator and exits cleanly; ranks 0 and 1, once its process is gone
// (an AllGather of pids names it), exchange send/recv pairs for half a second, every one exact. A
// peer's exit fails the waits on it only (CudaWaitArgs::peerExited), and those only once what it
// sent before has landed. Needs 3 ranks or more.
std::string runGpuLeave(const ccUniqueId& id, int rank, int nranks, std::string* refusal);

}  // namespace collcomm::test
