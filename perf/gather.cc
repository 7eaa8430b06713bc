// gather_perf: ccGather. Each rank's count/n elements land, in rank order, in the root's receive
// buffer; other ranks' receive buffers must stay untouched (in place: but for their own slice).
// busbw = algbw * (n-1)/n, as nccl-tests computes it.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int n) {
  const size_t per = count / n;
  return Counts{.send = per, .recv = per * n, .param = per, .sendInPlace = per, .recvInPlace = 0};
}

double busFactor(int n) { return static_cast<double>(n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int root, ccComm_t comm,
               ccStream_t stream) {
  return ccGather(send, recv, count, type, root, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kCopy, s.rank, s.rank * s.param});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  for (int j = 0; j < s.nranks; ++j) {
    const bool arrives = s.rank == s.root || (s.inPlace && j == s.rank);
    out->push_back({j * s.param, s.param, arrives ? ValueKind::kCopy : ValueKind::kUntouched, j, j * s.param});
  }
}

constexpr Collective kGather{.name = "Gather",
                             .program = "gather_perf",
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

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kGather); }
