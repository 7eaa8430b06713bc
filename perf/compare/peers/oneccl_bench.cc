// oneccl_bench.cc - Intel oneCCL's host (CPU) collectives timed the way mpi_bench.cc times MPI's, so
// that perf/compare can put them beside collcomm: ccl::allreduce and ccl::reduce_scatter (float32
// sum), ccl::allgather (out of place) and ccl::broadcast (in place), with the same op names, sizes,
// inputs, checks and output rows as mpi_bench (bench_common.h).
//
// Processes come from mpirun; MPI is only the control plane: it hands rank 0's oneCCL key-value
// store address to the other ranks (oneCCL's bootstrap), and carries the barriers before each timed
// loop, the slowest rank's time and the check counts. Every timed operation is oneCCL's, waited on.
//
// Method: per size, a warm-up (20 iterations up to 1 MiB, 2 above) whose slowest rank's mean time
// sizes the timed loop to about -t seconds; the reported time is the slowest rank's mean per
// operation; the result of every size is checked exactly.
//
// Build: peers/build.sh BIN_DIR LOG_DIR oneccl (oneCCL from peers/install_oneccl.sh)
// Run:   mpirun -np 2 --bind-to core ./oneccl_bench -o all -s 8,1K,1M
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <oneapi/ccl.hpp>

#include "bench_common.h"

namespace {

enum class Op { Allreduce, Bcast, Allgather, ReduceScatter };

struct OpInfo {
  Op op;
  const char* name;
};
// The names are mpi_bench's, so compare.sh passes the same -o and the report reads the same rows.
constexpr OpInfo kOps[] = {{Op::Allreduce, "allreduce"},
                           {Op::Bcast, "bcast"},
                           {Op::Allgather, "allgather"},
                           {Op::ReduceScatter, "reducescatter"}};

// Page-aligned, zeroed (first touch outside the timed loop); freed with std::free.
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
std::unique_ptr<float[], FreeDeleter> pageBuffer(size_t count) {
  size_t bytes = (std::max<size_t>(count * sizeof(float), 4096) + 4095) & ~size_t(4095);
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) {
    std::fprintf(stderr, "oneccl_bench: cannot allocate %zu bytes\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::memset(p, 0, bytes);
  return std::unique_ptr<float[], FreeDeleter>(static_cast<float*>(p));
}

double slowest(double seconds) {
  double out = 0;
  MPI_Allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

[[noreturn]] void usage(int rank) {
  if (rank == 0)
    std::fprintf(stderr, "usage: oneccl_bench [-o allreduce|bcast|allgather|reducescatter|all[,...]]\n%s",
                 peers::kSweepUsage);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

// Rank 0 creates the main key-value store and MPI broadcasts its address; the others attach to it.
ccl::communicator makeCommunicator(int rank, int nranks) {
  ccl::shared_ptr_class<ccl::kvs> kvs;
  ccl::kvs::address_type address{};
  if (rank == 0) {
    kvs = ccl::create_main_kvs();
    address = kvs->get_address();
  }
  MPI_Bcast(address.data(), int(address.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rank != 0) kvs = ccl::create_kvs(address);
  return ccl::create_communicator(nranks, rank, kvs);
}

class Bench {
 public:
  Bench(const peers::SweepArgs& args, int rank, int nranks, ccl::communicator& comm)
      : args_(args),
        rank_(rank),
        n_(nranks),
        comm_(comm),
        capacity_(std::max<size_t>(args.largest() / sizeof(float), size_t(nranks)) + size_t(nranks)),
        send_(pageBuffer(capacity_)),
        recv_(pageBuffer(capacity_)) {}

  // Runs every size of OP; returns how many sizes gave a wrong result.
  int sweep(const OpInfo& info) {
    int failures = 0;
    size_t previous = 0;
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
      for (int i = 0; i < warm; i++) run(info.op, total, perRank);
      int iters = args_.itersFor(warm, slowest((MPI_Wtime() - t) / std::max(warm, 1)));
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime();
      for (int i = 0; i < iters; i++) run(info.op, total, perRank);
      double perOp = slowest((MPI_Wtime() - t) / iters);
      long wrong = check(info.op, total, perRank), wrongAll = 0;
      MPI_Allreduce(&wrong, &wrongAll, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      failures += wrongAll != 0;
      if (rank_ == 0) {
        size_t countShown = (info.op == Op::Allreduce || info.op == Op::Bcast) ? total : perRank;
        peers::printRow(info.name, info.name, n_, kNameWidth, bytes, countShown, iters, perOp, wrongAll == 0);
      }
    }
    return failures;
  }

  static constexpr int kNameWidth = 13;

 private:
  void fill(Op op, size_t total, size_t perRank) {
    float* s = send_.get();
    float* r = recv_.get();
    switch (op) {
      case Op::Allreduce:
      case Op::ReduceScatter:
        for (size_t i = 0; i < total; i++) s[i] = peers::reduceInput(rank_, i);
        std::fill(r, r + total, -1.0f);
        break;
      case Op::Bcast:
        for (size_t i = 0; i < total; i++) s[i] = rank_ == 0 ? peers::bcastInput(i) : -1.0f;
        break;
      case Op::Allgather:
        for (size_t i = 0; i < perRank; i++) s[i] = peers::gatherInput(rank_, i);
        std::fill(r, r + total, -1.0f);
        break;
    }
  }

  // Each call returns when this rank's part is done, as a blocking MPI collective does.
  void run(Op op, size_t total, size_t perRank) {
    constexpr auto f32 = ccl::datatype::float32;
    switch (op) {
      case Op::Allreduce:
        ccl::allreduce(send_.get(), recv_.get(), total, f32, ccl::reduction::sum, comm_).wait();
        break;
      case Op::Bcast:
        ccl::broadcast(send_.get(), total, f32, 0, comm_).wait();
        break;
      case Op::Allgather:
        ccl::allgather(send_.get(), recv_.get(), perRank, f32, comm_).wait();
        break;
      case Op::ReduceScatter:
        ccl::reduce_scatter(send_.get(), recv_.get(), perRank, f32, ccl::reduction::sum, comm_).wait();
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
        for (size_t i = 0; i < total; i++) wrong += r[i] != peers::reduceExpected(n_, i);
        break;
      case Op::Bcast:
        for (size_t i = 0; i < total; i++) wrong += s[i] != peers::bcastInput(i);
        break;
      case Op::Allgather:
        for (int from = 0; from < n_; from++)
          for (size_t i = 0; i < perRank; i++) wrong += r[from * perRank + i] != peers::gatherInput(from, i);
        break;
      case Op::ReduceScatter:
        for (size_t i = 0; i < perRank; i++) wrong += r[i] != peers::reduceExpected(n_, rank_ * perRank + i);
        break;
    }
    return wrong;
  }

  const peers::SweepArgs& args_;
  const int rank_;
  const int n_;
  ccl::communicator& comm_;
  const size_t capacity_;
  std::unique_ptr<float[], FreeDeleter> send_;
  std::unique_ptr<float[], FreeDeleter> recv_;
};

std::string libraryVersion() {
  ccl::library_version v = ccl::get_library_version();
  return std::string("Intel oneCCL ") + (v.full ? v.full : "(version unknown)");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  peers::SweepArgs args;
  std::vector<const OpInfo*> ops;
  for (int i = 1; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) usage(rank);
    std::string value = argv[i + 1];
    if (key != "-o") {
      if (!args.take(key, value)) usage(rank);
      continue;
    }
    for (const auto& name : peers::splitList(value)) {
      size_t before = ops.size();
      for (const auto& info : kOps)
        if (name == "all" || name == info.name) ops.push_back(&info);
      if (ops.size() == before) usage(rank);
    }
  }
  if (ops.empty()) ops.push_back(&kOps[0]);
  args.finish();

  int failures = 0;
  try {
    ccl::init();
    ccl::communicator comm = makeCommunicator(rank, nranks);
    Bench bench(args, rank, nranks, comm);
    if (rank == 0) peers::printHeader(libraryVersion(), nranks, Bench::kNameWidth);
    for (const OpInfo* info : ops) failures += bench.sweep(*info);
  } catch (const std::exception& e) {
    // A oneCCL error on one rank would leave the others waiting in a collective: abort them all.
    std::fprintf(stderr, "oneccl_bench: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}
