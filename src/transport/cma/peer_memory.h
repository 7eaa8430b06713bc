// Reading and writing another rank's memory on the same host: a plain copy when the rank is a
// thread of this process, cross-memory attach (process_vm_readv/writev) when it is another
// process. What the Direct algorithm (device/host/host_platform.cc) moves its data with.
//
// Data tier: a cross-process read is one syscall per call (the kernel copies straight from the
// peer's pages, no staging); a same-process read is a memcpy. No allocation, no lock.
#pragma once

#include <cstddef>

#include "common/status.h"

namespace collcomm::detail {

// The rank whose memory is read, and what an error sentence says about it.
struct PeerMemory {
  int rank = -1;
  int pid = 0;               // its process (ignored when sameProcess)
  bool sameProcess = false;  // a thread of this process: its pointers are ours
  const char* host = "?";
};

// Copies `bytes` at `remote` (an address in the peer's process) to `dst`. Partial reads are
// resumed. A peer that has exited (ESRCH), an address the peer does not map (EFAULT) or a
// permission lost mid-job (EPERM) give Status::kRemoteError with a sentence naming the operation
// `opName`, this rank `selfRank` and the peer's rank and host.
Status readPeer(const PeerMemory& peer, const void* remote, void* dst, size_t bytes, const char* opName, int selfRank);

// Copies `bytes` at `src` to `remote` (an address in the peer's process), as readPeer the other
// way (process_vm_writev across processes; the same access check as reading).
Status writePeer(const PeerMemory& peer, const void* src, void* remote, size_t bytes, const char* opName, int selfRank);

// One cross-process read attempt for the init probe: 0 when `bytes` at `remote` in process `pid`
// were read into `dst`, else the errno that stopped it (EIO for a short read). Never logs.
int tryReadProcess(int pid, const void* remote, void* dst, size_t bytes);

}  // namespace collcomm::detail
