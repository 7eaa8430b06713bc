/*
 * dp_training: data-parallel training of the linear layer of tiny_model.h with SGD. Each step takes
 * the next batch of 24 samples; every rank computes the mean loss gradient on its share of the
 * batch, and ccAllReduce(ccAvg) turns the ranks' gradients into the batch's mean gradient, which
 * every rank applies. The program then checks the two promises of data parallelism:
 *   - every rank holds bit-for-bit the same parameters (all_gather, then memcmp), and
 *   - they are the parameters one process gets training on whole batches (within float tolerance:
 *     the sums are taken in another order).
 *
 *   dp_training [-t N]           ranks as threads (default 2); N must divide 24
 *   ccrun -n 3 dp_training       ranks as processes (also mpirun -n 3 dp_training)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_ranks.h"
#include "tiny_model.h"

#define BATCH 24
#define STEPS 40
#define LEARNING_RATE 0.5f
#define TOLERANCE 1e-4

/* One SGD step on samples [first, first+count) of the data set, in one process. */
static void referenceStep(float* p, int first, int count) {
  float grad[PARAMS] = {0};
  lossAndGrad(p, first, count, grad);
  for (int k = 0; k < PARAMS; ++k) p[k] -= LEARNING_RATE * grad[k] / (float)count;
}

static int dpTraining(int rank, int nranks, ccComm_t comm) {
  if (BATCH % nranks != 0) {
    examplePrintf(rank, "needs a rank count that divides the batch of %d (1, 2, 3, 4, 6, 8, ...)\n", BATCH);
    return 1;
  }
  const int share = BATCH / nranks;
  float params[PARAMS], reference[PARAMS];
  float grad[PARAMS + 1]; /* the mean gradient, then the mean loss (averaged along with it) */
  if (rank == 0) initParams(params);
  EXAMPLE_CHECK(rank, comm, ccBroadcast(params, params, PARAMS, ccFloat32, 0, comm, NULL));
  initParams(reference);

  for (int step = 0; step < STEPS; ++step) {
    const int batchStart = (step * BATCH) % SAMPLES, first = batchStart + rank * share;
    memset(grad, 0, sizeof(grad));
    grad[PARAMS] = lossAndGrad(params, first, share, grad);
    for (int k = 0; k <= PARAMS; ++k) grad[k] /= (float)share;
    EXAMPLE_CHECK(rank, comm, ccAllReduce(grad, grad, PARAMS + 1, ccFloat32, ccAvg, comm, NULL));
    for (int k = 0; k < PARAMS; ++k) params[k] -= LEARNING_RATE * grad[k];
    referenceStep(reference, batchStart, BATCH);
    if (rank == 0 && (step % 8 == 0 || step == STEPS - 1))
      examplePrintf(rank, "step %2d: batch loss %.6f\n", step, grad[PARAMS]);
  }

  /* Identical on every rank: compare everyone's parameters with this rank's, bit for bit. */
  int identical = 1;
  float* everyone = malloc(sizeof(float) * PARAMS * nranks);
  if (everyone == NULL) return 1;
  EXAMPLE_CHECK(rank, comm, ccAllGather(params, everyone, PARAMS, ccFloat32, comm, NULL));
  for (int r = 0; r < nranks; ++r) {
    if (memcmp(everyone + (size_t)r * PARAMS, params, sizeof(params)) != 0) {
      examplePrintf(rank, "WRONG: rank %d's parameters differ from mine\n", r);
      identical = 0;
    }
  }
  free(everyone);

  /* Equal to one process's training, within tolerance. */
  double maxDiff = 0;
  for (int k = 0; k < PARAMS; ++k) {
    const double diff = fabs((double)params[k] - (double)reference[k]) / fmax(1.0, fabs(reference[k]));
    maxDiff = diff > maxDiff ? diff : maxDiff;
  }
  examplePrintf(rank, "parameters %s on all %d ranks; largest difference from one process: %.2g%s\n",
                identical ? "identical" : "NOT identical", nranks, maxDiff, maxDiff > TOLERANCE ? " -- WRONG" : "");
  return !identical || maxDiff > TOLERANCE;
}

int main(int argc, char** argv) { return exampleRun(argc, argv, "dp_training", 2, 1, dpTraining); }
