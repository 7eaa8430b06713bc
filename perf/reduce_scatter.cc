// reduce_scatter_perf: ccReduceScatter. Each rank contributes count elements (n slices); rank r
// ends with the reduction of slice r. In place, rank r's result lands on its own slice.
// busbw = algbw * (n-1)/n: each rank sends the n-1 slices it does not keep.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int n) {
  const size_t per = count / n;
  return Counts{.send = per * n, .recv = per, .param = per, .sendInPlace = 0, .recvInPlace = per};
}

double busFactor(int n) { return static_cast<double>(n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t op, int, ccComm_t comm,
               ccStream_t stream) {
  return ccReduceScatter(send, recv, count, type, op, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param * s.nranks, ValueKind::kReduceInput, s.rank, 0});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kReduced, -1, s.rank * s.param});
}

constexpr Collective kReduceScatter{.name = "ReduceScatter",
                                    .program = "reduce_scatter_perf",
                                    .reduces = true,
                                    .rooted = false,
                                    .checksInPlace = true,
                                    .counts = counts,
                                    .busFactor = busFactor,
                                    .run = run,
                                    .inputs = inputs,
                                    .expected = expected};

}  // namespace
}  // namespace collcomm::perf

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kReduceScatter); }
