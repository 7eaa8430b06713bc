// What the kernels that talk to every peer (one-shot, Direct) do with their per-peer connections
// (CudaPeerCollArgs::peers) around the portable algorithm: every thread takes private copies
// before the block's first barrier (so that thread 0's write-back at the end cannot overtake a
// sibling's read), and at the end thread 0 writes the step counters back; a collective that did not
// finish tells every peer this rank left.
#pragma once

#include "device/cuda/cuda_args.h"
#include "device/cuda/cuda_platform.cuh"
#include "device/fifo.h"
#include "device/transfer.h"

namespace collcomm::detail {

struct PeerConnCopies {
  SendConn sends[kCudaMaxPeerRanks];
  RecvConn recvs[kCudaMaxPeerRanks];
  ExecPeerConn peers[kCudaMaxPeerRanks];  // the copies, as the portable algorithms take them

  __device__ void take(const CudaPeerCollArgs& args) {
    for (int p = 0; p < args.nranks; ++p) {
      if (p == args.rank) continue;
      sends[p] = *args.peers[p].send;
      recvs[p] = *args.peers[p].recv;
      peers[p] = ExecPeerConn{&sends[p], &recvs[p]};
    }
  }

  // No barrier here: threads that failed may already have left.
  __device__ void finish(const CudaPeerCollArgs& args, bool done) {
    for (int p = 0; p < args.nranks; ++p) {
      if (p == args.rank) continue;
      if (!done) {
        CudaPlatform::leave(sends[p].peer, args.rank, kGoneFailed);
        CudaPlatform::leave(recvs[p].peer, args.rank, kGoneFailed);
      }
      if (threadIdx.x != 0) continue;
      args.peers[p].send->simpleStep = sends[p].simpleStep;
      args.peers[p].recv->simpleStep = recvs[p].simpleStep;
    }
  }
};

}  // namespace collcomm::detail
