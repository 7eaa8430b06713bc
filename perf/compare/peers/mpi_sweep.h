// mpi_sweep.h - the sweep the MPI-launched peer benchmarks share (mpi_bench.cc, oneccl_bench.cc):
// processes come from mpirun and MPI is their control plane (barriers before each timed loop, the
// slowest rank's time, the check counts); each benchmark supplies only its library's four blocking
// float32 calls. Output rows, inputs and checks are bench_common.h's.
//
// Method: per size, a warm-up (20 iterations up to 1 MiB, 2 above) whose slowest rank's mean time
// sizes the timed loop to about -t seconds; the reported time is the slowest rank's mean per
// operation; the result of every size is checked exactly.
#pragma once

#include <mpi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.h"

namespace peers {

// allreduce and reducescatter: float32 sum, out of place; allgather: out of place; bcast: in place
// (send buffer), root 0, as MPI defines it.
enum class Op { Allreduce, Bcast, Allgather, ReduceScatter };

struct OpInfo {
  Op op;
  const char* name;
};
inline constexpr OpInfo kOps[] = {{Op::Allreduce, "allreduce"},
                                  {Op::Bcast, "bcast"},
                                  {Op::Allgather, "allgather"},
                                  {Op::ReduceScatter, "reducescatter"}};

class MpiSweep {
 public:
  // After MPI_Init: reads this process's place and the command line; a bad one ends every rank.
  MpiSweep(const char* program, int argc, char** argv) : program_(program) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    for (int i = 1; i < argc; i += 2) {
      std::string key = argv[i];
      if (i + 1 >= argc) usage();
      std::string value = argv[i + 1];
      if (key != "-o") {
        if (!args_.take(key, value)) usage();
        continue;
      }
      for (const auto& name : splitList(value)) {
        size_t before = ops_.size();
        for (const auto& info : kOps)
          if (name == "all" || name == info.name) ops_.push_back(&info);
        if (ops_.size() == before) usage();
      }
    }
    if (ops_.empty()) ops_.push_back(&kOps[0]);
    args_.finish();
  }

  int rank() const { return rank_; }
  int nranks() const { return n_; }

  // Prints the header, then sweeps every requested op with `run(op, send, recv, total, perRank)`, a
  // blocking call of the library under test; returns how many sizes gave a wrong result.
  template <class Run>
  int runAll(const std::string& libraryVersion, Run&& run) {
    capacity_ = std::max<size_t>(args_.largest() / sizeof(float), size_t(n_)) + size_t(n_);
    send_ = pageBuffer(capacity_);
    recv_ = pageBuffer(capacity_);
    if (rank_ == 0) printHeader(libraryVersion, n_, kNameWidth);
    int failures = 0;
    for (const OpInfo* info : ops_) failures += sweep(*info, run);
    return failures;
  }

 private:
  static constexpr int kNameWidth = 13;

  struct FreeDeleter {
    void operator()(float* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<float[], FreeDeleter>;

  [[noreturn]] void usage() const {
    if (rank_ == 0)
      std::fprintf(stderr, "usage: %s [-o allreduce|bcast|allgather|reducescatter|all[,...]]\n%s", program_,
                   kSweepUsage);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::exit(2);
  }

  // Page-aligned, zeroed (first touch outside the timed loop).
  Buffer pageBuffer(size_t count) const {
    size_t bytes = (std::max<size_t>(count * sizeof(float), 4096) + 4095) & ~size_t(4095);
    void* p = std::aligned_alloc(4096, bytes);
    if (!p) {
      std::fprintf(stderr, "%s: cannot allocate %zu bytes\n", program_, bytes);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    std::memset(p, 0, bytes);
    return Buffer(static_cast<float*>(p));
  }

  static double slowest(double seconds) {
    double out = 0;
    MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }

  template <class Run>
  int sweep(const OpInfo& info, Run& run) {
    int failures = 0;
    size_t previous = 0;
    auto once = [&](size_t total, size_t perRank) { run(info.op, send_.get(), recv_.get(), total, perRank); };
    for (size_t requested : args_.sizes) {
      size_t total = std::max<size_t>(requested / sizeof(float), 1);  // elements of the full vector
      size_t perRank = total;
      if (info.op == Op::Allgather || info.op == Op::ReduceScatter) {
        perRank = std::max<size_t>(total / n_, 1);
        total = perRank * n_;
      }
      size_t bytes = total * sizeof(float);
      if (bytes == previous) continue;  // sizes that round to the same vector run once
      previous = bytes;
      fill(info.op, total, perRank);
      int warm = args_.warmupFor(bytes);
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      for (int i = 0; i < warm; i++) once(total, perRank);
      int iters = args_.itersFor(warm, slowest((MPI_Wtime() - t) / std::max(warm, 1)));
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime();
      for (int i = 0; i < iters; i++) once(total, perRank);
      double perOp = slowest((MPI_Wtime() - t) / iters);
      long wrong = check(info.op, total, perRank), wrongAll = 0;
      MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      failures += wrongAll != 0;
      if (rank_ == 0) {
        size_t countShown = (info.op == Op::Allreduce || info.op == Op::Bcast) ? total : perRank;
        printRow(info.name, info.name, n_, kNameWidth, bytes, countShown, iters, perOp, wrongAll == 0);
      }
    }
    return failures;
  }

  void fill(Op op, size_t total, size_t perRank) {
    float* s = send_.get();
    float* r = recv_.get();
    switch (op) {
      case Op::Allreduce:
      case Op::ReduceScatter:
        for (size_t i = 0; i < total; i++) s[i] = reduceInput(rank_, i);
        std::fill(r, r + total, -1.0f);
        break;
      case Op::Bcast:
        for (size_t i = 0; i < total; i++) s[i] = rank_ == 0 ? bcastInput(i) : -1.0f;
        break;
      case Op::Allgather:
        for (size_t i = 0; i < perRank; i++) s[i] = gatherInput(rank_, i);
        std::fill(r, r + total, -1.0f);
        break;
    }
  }

  // Out-of-place results stay the same after every iteration, so the last one is checked.
  long check(Op op, size_t total, size_t perRank) const {
    const float* s = send_.get();
    const float* r = recv_.get();
    long wrong = 0;
    switch (op) {
      case Op::Allreduce:
        for (size_t i = 0; i < total; i++) wrong += r[i] != reduceExpected(n_, i);
        break;
      case Op::Bcast:
        for (size_t i = 0; i < total; i++) wrong += s[i] != bcastInput(i);
        break;
      case Op::Allgather:
        for (int from = 0; from < n_; from++)
          for (size_t i = 0; i < perRank; i++) wrong += r[from * perRank + i] != gatherInput(from, i);
        break;
      case Op::ReduceScatter:
        for (size_t i = 0; i < perRank; i++) wrong += r[i] != reduceExpected(n_, rank_ * perRank + i);
        break;
    }
    return wrong;
  }

  const char* program_;
  int rank_ = 0;
  int n_ = 1;
  SweepArgs args_;
  std::vector<const OpInfo*> ops_;
  size_t capacity_ = 0;
  Buffer send_;
  Buffer recv_;
};

}  // namespace peers
