// Every rank of the job, as one process sees them: its own threads (one rank each, -t) and, when a
// launcher (ccrun, mpirun, srun) started several processes, the others through a control
// communicator with one rank per process — the perf binaries' MPI_COMM_WORLD, made with the
// library itself so they need no MPI.
//
// The collective helpers here (barrier, combine, ...) are what nccl-tests does with pthread
// barriers plus MPI: every rank calls them in the same order with its local thread index; the
// process's thread 0 does the cross-process part. Control tier: they sit between timed loops
// (except -z's barrier), block on a condition variable, and allocate.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "collcomm.h"
#include "common/options.h"
#include "common/report.h"

namespace collcomm::perf {

struct Layout {
  int nprocs = 1;
  int proc = 0;
  int nthreads = 1;
  const char* launcher = "none";
  int nranks() const { return nprocs * nthreads; }
  int globalRank(int thread) const { return proc * nthreads + thread; }
};

class Team {
 public:
  Team() = default;
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  // Reads the launcher's environment and, with several processes, creates the control
  // communicator. Main thread, before any rank thread exists; fails the process on error.
  void init(const Options& opts);
  const Layout& layout() const { return layout_; }
  // One fresh id for the measured communicator, the same in every process (process 0 makes it).
  ccUniqueId shareDataId();

  void barrier(int thread);
  // Combines one value per rank; every rank gets the result.
  double combine(int thread, double v, TimeCombine how);
  int64_t sum(int thread, int64_t v);
  // Element-wise maximum over ranks of equally long vectors, in place.
  void maxEach(int thread, std::vector<double>* v);
  // Every rank's info, in rank order (every rank gets it).
  std::vector<RankInfo> gather(int thread, const RankInfo& mine);

 private:
  // All local threads arrive; thread 0 runs crossProcess() (slots are filled, results are
  // published by it); then all leave.
  template <class F>
  void exchange(int thread, F&& crossProcess);

  Layout layout_;
  ccComm_t control_ = nullptr;  // one rank per process; null in a single process
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<double> dslots_;
  std::vector<int64_t> islots_;
  std::vector<std::vector<double>*> vslots_;
  std::vector<RankInfo> infoSlots_;
  double dresult_ = 0;
  int64_t iresult_ = 0;
  std::vector<double> vresult_;
  std::vector<RankInfo> infoResult_;
};

}  // namespace collcomm::perf
