// Peer-memory copies for the Direct algorithm: memcpy within a process, process_vm_readv/writev
// across.
#include "transport/cma/peer_memory.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace collcomm::detail {
namespace {

// Copies until done or an error, out of the peer's memory (process_vm_readv) or into it
// (process_vm_writev); returns 0 or the errno (EIO when the kernel copies nothing and reports no
// error, which would otherwise loop forever).
int copyLoop(int pid, char* local, char* remote, size_t bytes, bool intoPeer) {
  size_t done = 0;
  while (done < bytes) {
    iovec mine{local + done, bytes - done};
    iovec far{remote + done, bytes - done};
    const ssize_t n =
        intoPeer ? process_vm_writev(pid, &mine, 1, &far, 1, 0) : process_vm_readv(pid, &mine, 1, &far, 1, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

// One copy between this process's `local` and the peer's `remote`, either way, with the sentence
// a failure gives.
Status copyWithPeer(const PeerMemory& peer, char* local, char* remote, size_t bytes, bool intoPeer, const char* opName,
                    int selfRank) {
  if (bytes == 0) return kOk;
  if (peer.sameProcess) {
    intoPeer ? memcpy(remote, local, bytes) : memcpy(local, remote, bytes);
    return kOk;
  }
  const int err = copyLoop(peer.pid, local, remote, bytes, intoPeer);
  if (err == 0) return kOk;
  const char* why = err == ESRCH    ? "the peer process has exited"
                    : err == EFAULT ? "the peer's buffer is not mapped in its process (freed, or a bad pointer "
                                      "passed on that rank)"
                    : err == EPERM  ? "permission to access the peer's memory was refused"
                                    : "the copy failed";
  return CC_ERROR(Status::kRemoteError,
                  "%s on rank %d failed: %s %zu bytes of rank %d's buffer (host %s, pid %d) with %s: %s (%s)", opName,
                  selfRank, intoPeer ? "writing" : "reading", bytes, peer.rank, peer.host, peer.pid,
                  intoPeer ? "process_vm_writev" : "process_vm_readv", why, strerror(err));
}

}  // namespace

int tryReadProcess(int pid, const void* remote, void* dst, size_t bytes) {
  return copyLoop(pid, static_cast<char*>(dst), const_cast<char*>(static_cast<const char*>(remote)), bytes, false);
}

Status readPeer(const PeerMemory& peer, const void* remote, void* dst, size_t bytes, const char* opName, int selfRank) {
  return copyWithPeer(peer, static_cast<char*>(dst), const_cast<char*>(static_cast<const char*>(remote)), bytes, false,
                      opName, selfRank);
}

Status writePeer(const PeerMemory& peer, const void* src, void* remote, size_t bytes, const char* opName,
                 int selfRank) {
  return copyWithPeer(peer, const_cast<char*>(static_cast<const char*>(src)), static_cast<char*>(remote), bytes, true,
                      opName, selfRank);
}

}  // namespace collcomm::detail
