// sendrecv_perf: one ccSend to the next rank and one ccRecv from the previous, in a group — a
// ring shift. The in-place result is not defined (nccl-tests prints N/A): only out of place is
// checked. busbw = algbw: each rank's data crosses one link.
#include "common/collective.h"

namespace collcomm::perf {
namespace {

Counts counts(size_t count, int) { return Counts{.send = count, .recv = count, .param = count}; }

double busFactor(int) { return 1.0; }

ccResult_t run(const void* send, void* recv, size_t count, ccDataType_t type, ccRedOp_t, int, ccComm_t comm,
               ccStream_t stream) {
  int n = 0, rank = 0;
  ccResult_t r = ccCommCount(comm, &n);
  if (r == ccSuccess) r = ccCommUserRank(comm, &rank);
  if (r != ccSuccess) return r;
  if ((r = ccGroupStart()) != ccSuccess) return r;
  ccResult_t s = ccSend(send, count, type, (rank + 1) % n, comm, stream);
  if (s == ccSuccess) s = ccRecv(recv, count, type, (rank + n - 1) % n, comm, stream);
  r = ccGroupEnd();
  return s != ccSuccess ? s : r;
}

void inputs(const Shape& s, std::vector<Segment>* out) { out->push_back({0, s.param, ValueKind::kCopy, s.rank, 0}); }

void expected(const Shape& s, std::vector<Segment>* out) {
  out->push_back({0, s.param, ValueKind::kCopy, (s.rank + s.nranks - 1) % s.nranks, 0});
}

constexpr Collective kSendRecv{.name = "SendRecv",
                               .program = "sendrecv_perf",
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

int main(int argc, char** argv) { return collcomm::perf::perfMain(argc, argv, collcomm::perf::kSendRecv); }
