// alltoall_perf: ccAlltoAll. Rank r's slice j (count/n elements) goes to rank j's slice r. The
// in-place result is not defined (nccl-tests prints N/A), so only out of place is checked.
// busbw = algbw * (n-1)/n: each rank sends n-1 of its n slices away.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int n) {
  const size_t per = count / n;
  return Counts{.send = per * n, .recv = per * n, .param = per};
}

double busFactor(int n) { return static_cast<double>(n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int, ccComm_t comm,
               ccStream_t stream) {
  return ccAlltoAll(send, recv, count, type, comm, stream);
}

// Rank r's data for rank j uses generator indices from j*per, so every (source, destination)
// pair carries different values.
void inputs(const Shape& s, std::vector<Segment>* out) {
  for (int j = 0; j < s.nranks; ++j) out->push_back({j * s.param, s.param, ValueKind::kCopy, s.rank, j * s.param});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  for (int j = 0; j < s.nranks; ++j) out->push_back({j * s.param, s.param, ValueKind::kCopy, j, s.rank * s.param});
}

constexpr Collective kAlltoAll{.name = "AlltoAll",
                               .program = "alltoall_perf",
                               .reduces = false,
                               .rooted = false,
                               .checksInPlace = false,
                               .counts = counts,
                               .busFactor = busFactor,
                               .run = run,
                               .inputs = inputs,
                               .expected = expected};

}  // namespace
}  // namespace collcomm::perf

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kAlltoAll); }
