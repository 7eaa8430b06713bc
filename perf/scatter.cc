// scatter_perf: ccScatter. The root's slice j (count/n elements) goes to rank j. In place, the
// root's own slice stays where it is and every rank's result sits at its slice of the buffer.
// busbw = algbw * (n-1)/n, as nccl-tests computes it.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int n) {
  const size_t per = count / n;
  return Counts{.send = per * n, .recv = per, .param = per, .sendInPlace = 0, .recvInPlace = per};
}

double busFactor(int n) { return static_cast<double>(n - 1) / n; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int root, ccComm_t comm,
               ccStream_t stream) {
  return ccScatter(send, recv, count, type, root, comm, stream);
}

void inputs(const Shape& s, std::vector<Segment>* out) {
  if (s.rank != s.root) return;
  for (int j = 0; j < s.nranks; ++j) out->push_back({j * s.param, s.param, ValueKind::kCopy, s.root, j * s.param});
}

void expected(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kCopy, s.root, s.rank * s.param});
}

constexpr Collective kScatter{.name = "Scatter",
                              .program = "scatter_perf",
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

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kScatter); }
