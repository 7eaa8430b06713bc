// SHM transport: ranks on the same host in different processes (or in one process with
// COLLCOMM_P2P_DISABLE=1). The receiver creates a POSIX shared memory segment, the sender maps it
// by name, and the receiver unlinks the name as soon as the sender has it, so nothing is left in
// /dev/shm even if both processes are killed later.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/params.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

struct ShmDescData {
  char name[64];
};
static_assert(sizeof(ShmDescData) <= sizeof(ConnDesc::data));

class ShmFifoMemory final : public FifoMemory {
 public:
  ShmFifoMemory(void* base, size_t bytes, const char* nameToUnlink) : base_(base), bytes_(bytes) {
    if (nameToUnlink != nullptr) snprintf(name_, sizeof(name_), "%s", nameToUnlink);
  }
  ~ShmFifoMemory() override {
    unlinkName();
    munmap(base_, bytes_);
  }
  void* base() override { return base_; }
  void unlinkName() {
    if (name_[0] != '\0') {
      shm_unlink(name_);
      name_[0] = '\0';
    }
  }

 private:
  void* base_;
  size_t bytes_;
  char name_[64] = {};
};

bool shmCanConnect(const PeerInfo& self, const PeerInfo& peer) {
  return self.hostHash == peer.hostHash && paramInt(Param::kShmDisable) == 0;
}

Status shmCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  static std::atomic<uint64_t> sequence{0};
  const size_t bytes = layout.totalBytes();
  ShmDescData data{};
  snprintf(data.name, sizeof(data.name), "/collcomm-%d-%llu-r%d-from%d", self.pid,
           static_cast<unsigned long long>(sequence.fetch_add(1)), self.rank, peer.rank);
  int fd = shm_open(data.name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return CC_ERROR(Status::kSystemError, "shm_open(%s) failed: %s; is /dev/shm mounted and writable?", data.name,
                    strerror(errno));
  // posix_fallocate reserves the pages now: a full /dev/shm is reported here, not as a SIGBUS later.
  int err = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? posix_fallocate(fd, 0, static_cast<off_t>(bytes)) : errno;
  if (err != 0) {
    close(fd);
    shm_unlink(data.name);
    struct statvfs vfs {};
    unsigned long long avail = statvfs("/dev/shm", &vfs) == 0 ? vfs.f_bavail * vfs.f_frsize : 0;
    return CC_ERROR(Status::kSystemError,
                    "could not reserve %zu bytes of shared memory in /dev/shm for the connection from rank %d (%s); "
                    "/dev/shm has %llu bytes free. Enlarge it (e.g. docker --shm-size), lower COLLCOMM_BUFFSIZE, or "
                    "set COLLCOMM_SHM_DISABLE=1",
                    bytes, peer.rank, strerror(err), avail);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(data.name);
    return CC_ERROR(Status::kSystemError, "mmap of %zu bytes of shared memory failed: %s", bytes, strerror(errno));
  }
  *mem = std::make_unique<ShmFifoMemory>(base, bytes, data.name);
  memset(desc, 0, sizeof(*desc));
  desc->bytes = bytes;
  memcpy(desc->data, &data, sizeof(data));
  return kOk;
}

Status shmAttachFifo(const ConnDesc& desc, const PeerInfo&, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem) {
  ShmDescData data;
  memcpy(&data, desc.data, sizeof(data));
  data.name[sizeof(data.name) - 1] = '\0';
  int fd = shm_open(data.name, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return CC_ERROR(Status::kSystemError,
                    "could not open rank %d's shared memory segment %s: %s (are both ranks on one host, sharing "
                    "/dev/shm?)",
                    peer.rank, data.name, strerror(errno));
  void* base = mmap(nullptr, desc.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED)
    return CC_ERROR(Status::kSystemError, "mmap of rank %d's shared memory segment failed: %s", peer.rank,
                    strerror(errno));
  *mem = std::make_unique<ShmFifoMemory>(base, desc.bytes, nullptr);
  return kOk;
}

Status shmSenderAttached(FifoMemory& mem, const PeerInfo&, const ConnSetup&) {
  static_cast<ShmFifoMemory&>(mem).unlinkName();
  return kOk;
}

}  // namespace

const TransportOps kShmTransport = {
    .name = "SHM",
    .canConnect = shmCanConnect,
    .createFifo = shmCreateFifo,
    .attachFifo = shmAttachFifo,
    .senderAttached = shmSenderAttached,
    .stepMaxBytes = nullptr,
};

}  // namespace collcomm::detail
