// reduce_perf: ccReduce. The root ends with the reduction; other ranks' receive buffers must stay
// as they were (untouched out of place; their own input in place), as nccl-tests checks.
// busbw = algbw: everything enters the root once.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int) { return Counts{.send = count, .recv = count, .param = count}; }

double busFactor(int) { return 1.0; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t op, int root, ccComm_t comm,
               ccStream_t stream) {
  return ccReduce(send, recv, count, type, op, root, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kReduceInput, s.rank, 0});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  if (s.rank == s.root)
    out->push_back({0, s.param, ValueKind::kReduced, -1, 0});
  else if (s.inPlace)
    out->push_back({0, s.param, ValueKind::kReduceInput, s.rank, 0});
  else
    out->push_back({0, s.param, ValueKind::kUntouched, -1, 0});
}

constexpr Collective kReduce{.name = "Reduce",
                             .program = "reduce_perf",
                             .reduces = true,
                             .rooted = true,
                             .checksInPlace = true,
                             .counts = counts,
                             .busFactor = busFactor,
                             .run = run,
                             .inputs = inputs,
                             .expected = expected};

}  // namespace
}  // namespace collcomm::perf

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kReduce); }
