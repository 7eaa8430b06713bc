// mpi_bench.cc - MPI's host collectives timed the way collcomm's perf binaries time theirs, so that
// perf/compare can put them side by side: MPI_Allreduce and MPI_Reduce_scatter_block (float32 sum),
// MPI_Allgather (out of place) and MPI_Bcast (in place, as MPI defines it). Builds against any MPI;
// the sweep, its method and its output are mpi_sweep.h's.
//
// Build: mpicxx -O2 -std=c++17 -o mpi_bench mpi_bench.cc
// Run:   mpirun -np 2 --bind-to core ./mpi_bench -o all -s 8,1K,1M
#include <mpi.h>

#include <string>

#include "mpi_sweep.h"

namespace {

void runOp(peers::Op op, float* send, float* recv, size_t total, size_t perRank) {
  int count = int(total), part = int(perRank);
  switch (op) {
    case peers::Op::Allreduce:
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case peers::Op::Bcast:
      MPI_Bcast(send, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      break;
    case peers::Op::Allgather:
      MPI_Allgather(send, part, MPI_FLOAT, recv, part, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case peers::Op::ReduceScatter:
      MPI_Reduce_scatter_block(send, recv, part, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, size_t(len));
  return v.substr(0, v.find('\n'));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  peers::MpiSweep sweep("mpi_bench", argc, argv);
  int failures = sweep.runAll(libraryVersion(), runOp);
  MPI_Finalize();
  return failures ? 1 : 0;
}
