// all_gather_perf: ccAllGather. Each rank contributes count/n elements; every rank ends with all n
// slices in rank order. In place, a rank's slice already sits at its place in the receive buffer.
// busbw = algbw * (n-1)/n: each rank receives the n-1 slices it does not have.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int n) {
  const size_t per = count / n;
  return Counts{.send = per, .recv = per * n, .param = per, .sendInPlace = per, .recvInPlace = 0};
}

double busFactor(int n) { return static_cast<double>(n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int, ccComm_t comm,
               ccStream_t stream) {
  return ccAllGather(send, recv, count, type, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kCopy, s.rank, s.rank * s.param});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  for (int j = 0; j < s.nranks; ++j) out->push_back({j * s.param, s.param, ValueKind::kCopy, j, j * s.param});
}

constexpr Collective kAllGather{.name = "AllGather",
                                .program = "all_gather_perf",
                                .reduces = false,
                                .rooted = false,
                                .checksInPlace = true,
                                .counts = counts,
                                .busFactor = busFactor,
                                .run = run,
                                .inputs = inputs,
                                .expected = expected};

}  // namespace
}  // namespace collcomm::perf

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kAllGather); }
