// oneccl_bench.cc - Intel oneCCL's host (CPU) collectives timed the way mpi_bench.cc times MPI's, so
// that perf/compare can put them beside collcomm: ccl::allreduce and ccl::reduce_scatter (float32
// sum), ccl::allgather (out of place) and ccl::broadcast (in place), with the same op names, sizes,
// inputs, checks and output rows as mpi_bench (bench_common.h).
//
// Processes come from mpirun; MPI is only the control plane: it hands rank 0's oneCCL key-value
// store address to the other ranks (oneCCL's bootstrap), and carries the barriers before each timed
// loop, the slowest rank's time and the check counts. Every timed operation is oneCCL's, waited on.
//
// The sweep, its method and its output are mpi_sweep.h's.
//
// Build: peers/build.sh BIN_DIR LOG_DIR oneccl (oneCCL from peers/install_oneccl.sh)
// Run:   mpirun -np 2 --bind-to core ./oneccl_bench -o all -s 8,1K,1M
#include <mpi.h>

#include <exception>
#include <oneapi/ccl.hpp>
#include <string>

#include "mpi_sweep.h"

namespace {

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

// Each call returns when this rank's part is done, as a blocking MPI collective does.
void runOp(ccl::communicator& comm, peers::Op op, float* send, float* recv, size_t total, size_t perRank) {
  constexpr auto f32 = ccl::datatype::float32;
  switch (op) {
    case peers::Op::Allreduce:
      ccl::allreduce(send, recv, total, f32, ccl::reduction::sum, comm).wait();
      break;
    case peers::Op::Bcast:
      ccl::broadcast(send, total, f32, 0, comm).wait();
      break;
    case peers::Op::Allgather:
      ccl::allgather(send, recv, perRank, f32, comm).wait();
      break;
    case peers::Op::ReduceScatter:
      ccl::reduce_scatter(send, recv, perRank, f32, ccl::reduction::sum, comm).wait();
      break;
  }
}

std::string libraryVersion() {
  ccl::library_version v = ccl::get_library_version();
  return std::string("Intel oneCCL ") + (v.full ? v.full : "(version unknown)");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  peers::MpiSweep sweep("oneccl_bench", argc, argv);
  int failures = 0;
  try {
    ccl::init();
    ccl::communicator comm = makeCommunicator(sweep.rank(), sweep.nranks());
    failures = sweep.runAll(libraryVersion(), [&](peers::Op op, float* send, float* recv, size_t total,
                                                  size_t perRank) { runOp(comm, op, send, recv, total, perRank); });
  } catch (const std::exception& e) {
    // A oneCCL error on one rank would leave the others waiting in a collective: abort them all.
    std::fprintf(stderr, "oneccl_bench: rank %d: %s\n", sweep.rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return failures ? 1 : 0;
}
