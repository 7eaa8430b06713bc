// NCCL-style C++ code, ported by including collcomm/nccl_compat.h instead of nccl.h and linking
// libcollcomm: one thread per rank with ncclGetUniqueId/ncclCommInitRank, point-to-point in groups,
// ncclCommSplit and PreMulSum; then NCCL's non-blocking pattern (config.blocking = 0, every rank's
// init and collective from one thread, polling ncclCommGetAsyncError). Host buffers and NULL
// streams are the port's only changes. Exits 0 when every result is exact.
#include <collcomm/nccl_compat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define NCCLCHECK(cmd)                                                                                        \
  do {                                                                                                        \
    ncclResult_t res_ = (cmd);                                                                                \
    if (res_ != ncclSuccess && res_ != ncclInProgress) {                                                      \
      std::printf("Failed, NCCL error %s:%d '%s'\n", __FILE__, __LINE__, ncclGetErrorString(res_));         \
      std::exit(EXIT_FAILURE);                                                                                \
    }                                                                                                         \
  } while (0)

namespace {

std::mutex failMu;
void expect(bool ok, const std::string& what) {
  if (ok) return;
  std::lock_guard<std::mutex> lock(failMu);
  std::printf("FAILED: %s\n", what.c_str());
  std::exit(EXIT_FAILURE);
}

// NCCL's documented loop for non-blocking communicators.
ncclResult_t waitReady(ncclComm_t comm) {
  ncclResult_t state;
  do {
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
  } while (state == ncclInProgress);
  return state;
}

void rankThread(int rank, int nranks, ncclUniqueId id) {
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));

  // A ring exchange: each rank sends to the next and receives from the previous, in one group.
  const size_t n = 4097;
  std::vector<int64_t> out(n), in(n, -1);
  for (size_t i = 0; i < n; ++i) out[i] = rank * 100000 + static_cast<int64_t>(i);
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(out.data(), n, ncclInt64, (rank + 1) % nranks, comm, nullptr));
  NCCLCHECK(ncclRecv(in.data(), n, ncclInt64, (rank + nranks - 1) % nranks, comm, nullptr));
  NCCLCHECK(ncclGroupEnd());
  const int prev = (rank + nranks - 1) % nranks;
  for (size_t i = 0; i < n; ++i) expect(in[i] == prev * 100000 + static_cast<int64_t>(i), "ring exchange");

  // PreMulSum: sum of 2 * (rank + 1).
  double scalar = 2.0, v = rank + 1.0;
  ncclRedOp_t op;
  NCCLCHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat64, ncclScalarHostImmediate, comm));
  NCCLCHECK(ncclAllReduce(&v, &v, 1, ncclDouble, op, comm, nullptr));
  NCCLCHECK(ncclRedOpDestroy(op, comm));
  expect(v == nranks * (nranks + 1.0), "premulsum gave " + std::to_string(v));

  // Split: even ranks together, odd ranks out.
  ncclComm_t sub;
  NCCLCHECK(ncclCommSplit(comm, rank % 2 == 0 ? 0 : NCCL_SPLIT_NOCOLOR, rank, &sub, nullptr));
  if (rank % 2 == 0) {
    int count = 0;
    NCCLCHECK(ncclCommCount(sub, &count));
    expect(count == (nranks + 1) / 2, "split size");
    int32_t x = rank;
    NCCLCHECK(ncclAllReduce(&x, &x, 1, ncclInt32, ncclMax, sub, nullptr));
    expect(x == (nranks - 1) / 2 * 2, "max over the even ranks");
    NCCLCHECK(ncclCommDestroy(sub));
  } else {
    expect(sub == NCCL_COMM_NULL, "NOCOLOR gave a communicator");
  }
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
}

void nonBlockingFromOneThread(int nranks) {
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> comms(nranks);
  ncclResult_t res = ncclGroupStart();
  expect(res == ncclSuccess, "group start");
  for (int r = 0; r < nranks; ++r) NCCLCHECK(ncclCommInitRankConfig(&comms[r], nranks, id, r, &config));
  res = ncclGroupEnd();
  expect(res == ncclInProgress || res == ncclSuccess, "non-blocking group end");
  for (ncclComm_t c : comms) expect(waitReady(c) == ncclSuccess, "non-blocking init");

  std::vector<std::vector<float>> buf(nranks, std::vector<float>(300));
  for (int r = 0; r < nranks; ++r)
    for (float& x : buf[r]) x = static_cast<float>(r);
  for (int r = 0; r < nranks; ++r)
    NCCLCHECK(ncclAllReduce(buf[r].data(), buf[r].data(), buf[r].size(), ncclFloat, ncclSum, comms[r], nullptr));
  for (ncclComm_t c : comms) expect(waitReady(c) == ncclSuccess, "non-blocking allreduce");
  for (int r = 0; r < nranks; ++r)
    for (float x : buf[r]) expect(x == nranks * (nranks - 1) / 2.0f, "non-blocking allreduce result");

  for (ncclComm_t c : comms) NCCLCHECK(ncclCommFinalize(c));
  for (ncclComm_t c : comms) expect(waitReady(c) == ncclSuccess, "finalize");
  for (ncclComm_t c : comms) NCCLCHECK(ncclCommDestroy(c));
}

}  // namespace

int main() {
  alarm(60);  // the watchdog: a hang ends the process
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  const int nranks = 5;
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back(rankThread, r, nranks, id);
  for (auto& t : threads) t.join();
  nonBlockingFromOneThread(4);
  std::printf("nccl_port_threads_nonblocking: OK\n");
  return 0;
#else
#error "ncclCommSplit needs NCCL 2.18"
#endif
}
