// Peer-memory reads for the Direct algorithm: memcpy within a process, process_vm_readv across.
#include "transport/cma/peer_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace collcomm::detail {
namespace {

// Reads until done or an error; returns 0 or the errno (EIO when the kernel reads nothing and
// reports no error, which would otherwise loop forever).
int readLoop(int pid, const char* remote, char* dst, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    iovec local{dst + done, bytes - done};
    iovec far{const_cast<char*>(remote) + done, bytes - done};
    const ssize_t n = process_vm_readv(pid, &local, 1, &far, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

int tryReadProcess(int pid, const void* remote, void* dst, size_t bytes) {
  return readLoop(pid, static_cast<const char*>(remote), static_cast<char*>(dst), bytes);
}

Status readPeer(const PeerMemory& peer, const void* remote, void* dst, size_t bytes, const char* opName, int selfRank) {
  if (bytes == 0) return kOk;
  if (peer.sameProcess) {
    memcpy(dst, remote, bytes);
    return kOk;
  }
  const int err = readLoop(peer.pid, static_cast<const char*>(remote), static_cast<char*>(dst), bytes);
  if (err == 0) return kOk;
  const char* why = err == ESRCH    ? "the peer process has exited"
                    : err == EFAULT ? "the peer's buffer is not mapped in its process (freed, or a bad pointer "
                                      "passed on that rank)"
                    : err == EPERM  ? "permission to read the peer's memory was refused"
                                    : "the read failed";
  return CC_ERROR(Status::kRemoteError,
                  "%s on rank %d failed: reading %zu bytes of rank %d's buffer (host %s, pid %d) with "
                  "process_vm_readv: %s (%s)",
                  opName, selfRank, bytes, peer.rank, peer.host, peer.pid, why, strerror(err));
}

}  // namespace collcomm::detail
