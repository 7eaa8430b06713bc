// P2P transport: ranks in the same process. The FIFO is heap memory shared by pointer; the two
// sides hold a reference each and the last one out frees it, so either side may be destroyed
// first, even while the other is still mid-operation.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/params.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

struct P2pBlockHeader {
  std::atomic<int> refs;
  size_t bytes;
};

struct P2pDescData {
  uint64_t processToken;
  uint64_t header;  // P2pBlockHeader*
};
static_assert(sizeof(P2pDescData) <= sizeof(ConnDesc::data));

constexpr size_t kHeaderBytes = kFifoAlign;

class P2pFifoMemory final : public FifoMemory {
 public:
  explicit P2pFifoMemory(P2pBlockHeader* header) : header_(header) {}
  ~P2pFifoMemory() override {
    if (header_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      header_->~P2pBlockHeader();
      free(header_);
    }
  }
  void* base() override { return reinterpret_cast<char*>(header_) + kHeaderBytes; }

 private:
  P2pBlockHeader* header_;
};

bool p2pCanConnect(const PeerInfo& self, const PeerInfo& peer) {
  return self.processToken == peer.processToken && paramInt(Param::kP2pDisable) == 0;
}

Status p2pCreateFifo(const FifoLayout& layout, const PeerInfo&, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  const size_t bytes = layout.totalBytes();
  void* raw = aligned_alloc(kFifoAlign, kHeaderBytes + bytes);
  if (raw == nullptr)
    return CC_ERROR(Status::kSystemError, "could not allocate %zu bytes for the connection from rank %d", bytes,
                    peer.rank);
  memset(raw, 0, kHeaderBytes + bytes);
  auto* header = new (raw) P2pBlockHeader{};
  // One reference for each side, taken now: should the sender attach late (after this side gave up
  // on it), the block is still there; should it never attach, one block leaks, never a dangling
  // pointer.
  header->refs.store(2, std::memory_order_relaxed);
  header->bytes = bytes;
  *mem = std::make_unique<P2pFifoMemory>(header);
  P2pDescData data{peer.processToken, reinterpret_cast<uint64_t>(header)};
  memset(desc, 0, sizeof(*desc));
  desc->bytes = bytes;
  memcpy(desc->data, &data, sizeof(data));
  return kOk;
}

Status p2pAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup&,
                     std::unique_ptr<FifoMemory>* mem) {
  P2pDescData data;
  memcpy(&data, desc.data, sizeof(data));
  if (data.processToken != self.processToken)
    return CC_ERROR(Status::kInternalError, "P2P connection description from rank %d names another process",
                    peer.rank);
  auto* header = reinterpret_cast<P2pBlockHeader*>(data.header);
  *mem = std::make_unique<P2pFifoMemory>(header);
  return kOk;
}

}  // namespace

const TransportOps kP2pTransport = {
    .name = "P2P",
    .canConnect = p2pCanConnect,
    .createFifo = p2pCreateFifo,
    .attachFifo = p2pAttachFifo,
    .senderAttached = nullptr,
    .stepMaxBytes = nullptr,
};

}  // namespace collcomm::detail
