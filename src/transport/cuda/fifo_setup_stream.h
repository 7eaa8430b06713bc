// The stream the CUDA transports clear their FIFOs on (one per device, for the process).
#pragma once

#include <cuda_runtime.h>

namespace collcomm::detail {

// One non-blocking stream per device, made at its first use and kept for the process: a stream per
// FIFO made hundreds per communicator, and every stream made moves the round-robin that maps
// streams onto the device's hardware queues (where two ranks' streams sharing a queue would order
// one rank's kernels behind the other's). Non-blocking, so that a clear does not wait for kernels
// spinning on their peers (as cudaMemset on the legacy stream would).
cudaError_t fifoSetupStream(int device, cudaStream_t* out);

}  // namespace collcomm::detail
