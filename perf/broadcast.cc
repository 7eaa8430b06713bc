// broadcast_perf: ccBroadcast. The root's count elements reach every rank.
// busbw = algbw: everything leaves the root once, so the root's link is the bottleneck.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int) { return Counts{.send = count, .recv = count, .param = count}; }

double busFactor(int) { return 1.0; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int root, ccComm_t comm,
               ccStream_t stream) {
  return ccBroadcast(send, recv, count, type, root, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  if (s.rank == s.root) out->push_back({0, s.param, ValueKind::kCopy, s.root, 0});
}

void expected(const Shape& s, std::vector<Segment>* out) { out->push_back({0, s.param, ValueKind::kCopy, s.root, 0}); }

constexpr Collective kBroadcast{.name = "Broadcast",
                                .program = "broadcast_perf",
                                .reduces = false,
                                .rooted = true,
                                .checksInPlace = true,
                                .counts = counts,
                                .busFactor = busFactor,
                                .run = run,
                                .inputs = inputs,
                                .expected = expected};

}  // namespace
}  // namespace collcomm::perf

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kBroadcast); }
