/*
 * How the examples get their ranks, so each example is only its rank's work.
 *
 * Started alone, a program runs its ranks as threads of one process: `-t N` (default: the example's
 * choice) host communicators from ccCommInitAll, one thread each. Started by a launcher — ccrun,
 * Open MPI's or MPICH's mpirun, srun — each process is one rank and joins its job with one call,
 * ccLaunchCommInit (collcomm_launch.h). The rank's function cannot tell
 * the difference: it gets its rank, the rank count and a host communicator either way.
 */
#ifndef COLLCOMM_EXAMPLE_RANKS_H_
#define COLLCOMM_EXAMPLE_RANKS_H_

#include <collcomm.h>

/* One rank's work. Returns 0 when everything it checked was right. Called on its own thread. */
typedef int (*ExampleRankFn)(int rank, int nranks, ccComm_t comm);

/* Parses `-t N` (threads; refused under a launcher) and `--version` from argv, makes the communicators, calls fn
 * once per rank, frees the communicators. minRanks: the least ranks the example works with.
 * Returns main's exit status: 0 when every rank returned 0, else 1 (2 for bad usage). */
int exampleRun(int argc, char** argv, const char* name, int defaultThreads, int minRanks, ExampleRankFn fn);

/* printf for ranks: every line of the text gets the prefix "rank R: " (except under ccrun, which
 * adds "[R] " itself), and the whole text goes out in one write, so the lines of different ranks
 * (threads or processes) do not mix. */
void examplePrintf(int rank, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

/* Evaluates a collcomm call; on failure prints it with the communicator's error sentence and
 * makes the enclosing rank function return 1. */
#define EXAMPLE_CHECK(rank, comm, call)                                                                \
  do {                                                                                                 \
    ccResult_t r_ = (call);                                                                            \
    if (r_ != ccSuccess) {                                                                             \
      examplePrintf((rank), "%s failed: %s: %s\n", #call, ccGetErrorString(r_), ccGetLastError(comm)); \
      return 1;                                                                                        \
    }                                                                                                  \
  } while (0)

#endif /* COLLCOMM_EXAMPLE_RANKS_H_ */
