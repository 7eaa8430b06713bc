// all_reduce_perf: ccAllReduce. Every rank ends with the reduction of every rank's count elements.
// busbw = algbw * 2(n-1)/n: a rank's data crosses the links twice (reduce, then broadcast).
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int) { return Counts{.send = count, .recv = count, .param = count}; }

double busFactor(int n) { return 2.0 * (n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t op, int, ccComm_t comm,
               ccStream_t stream) {
  return ccAllReduce(send, recv, count, type, op, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kReduceInput, s.rank, 0});
}

void expected(const Shape& s, std::vector<Segment>* out) { out->push_back({0, s.param, ValueKind::kReduced, -1, 0}); }

constexpr Collective kAllReduce{.name = "AllReduce",
                                .program = "all_reduce_perf",
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

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kAllReduce); }
