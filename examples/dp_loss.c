/*
 * dp_loss: the forward half of data parallelism. Rank 0 makes the model's weights and broadcasts
 * them; each rank computes the log-softmax loss of the linear layer on its shard of the data set
 * (tiny_model.h: 96 samples, split as evenly as the rank count allows); the loss sums and sample
 * counts are reduced to rank 0, which divides one by the other and compares the mean with the same
 * loss computed in one piece, here, without any communication.
 *
 *   dp_loss [-t N]           ranks as threads (default 2)
 *   ccrun -n 3 dp_loss       ranks as processes (also mpirun -n 3 dp_loss)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "example_ranks.h"
#include "tiny_model.h"

/* Sums in a different order (per shard, then across ranks) agree to about this relative error. */
#define TOLERANCE 1e-5

static int dpLoss(int rank, int nranks, ccComm_t comm) {
  float params[PARAMS], expected[PARAMS];
  int wrong = 0;

  /* Rank 0 owns the initial weights; the others start with NaN and get them by broadcast. */
  initParams(expected);
  if (rank == 0)
    memcpy(params, expected, sizeof(params));
  else
    for (int k = 0; k < PARAMS; ++k) params[k] = NAN;
  EXAMPLE_CHECK(rank, comm, ccBroadcast(params, params, PARAMS, ccFloat32, 0, comm, NULL));
  if (memcmp(params, expected, sizeof(params)) != 0) {
    examplePrintf(rank, "WRONG: the broadcast weights differ from rank 0's\n");
    wrong = 1;
  }

  /* This rank's shard: samples [first, last). */
  const int first = SAMPLES * rank / nranks, last = SAMPLES * (rank + 1) / nranks;
  float local[2] = {lossAndGrad(params, first, last - first, NULL), (float)(last - first)};
  examplePrintf(rank, "samples %2d..%2d: mean loss %.6f\n", first, last - 1, last > first ? local[0] / local[1] : 0.0f);

  float total[2] = {0, 0};
  EXAMPLE_CHECK(rank, comm, ccReduce(local, total, 2, ccFloat32, ccSum, 0, comm, NULL));
  if (rank == 0) {
    const float mean = total[0] / total[1];
    const float single = lossAndGrad(expected, 0, SAMPLES, NULL) / SAMPLES;
    const double diff = fabs((double)mean - (double)single);
    const int ok = total[1] == SAMPLES && diff <= TOLERANCE * fmax(1.0, fabs(single));
    examplePrintf(rank, "mean loss over %d ranks: %.6f; in one process: %.6f; difference %.2g%s\n", nranks, mean,
                  single, diff, ok ? "" : " -- WRONG");
    wrong |= !ok;
  }
  return wrong;
}

int main(int argc, char** argv) { return exampleRun(argc, argv, "dp_loss", 2, 1, dpLoss); }
