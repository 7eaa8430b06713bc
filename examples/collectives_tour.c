/*
 * collectives_tour: every collective once, on pictures you can read. Each rank paints a shape on an
 * 11x11 grid of int32 with the value rank+1 — a disk on even ranks, a square on odd ones, each
 * in its own place — and then runs:
 *
 *   all_reduce SUM, all_reduce MAX   every rank gets the cell-wise sum / maximum of all grids
 *   reduce SUM to rank 0             only rank 0 gets the sum
 *   broadcast from rank 0            every rank gets rank 0's grid
 *   all_gather                       every rank gets every rank's grid, in rank order
 *   reduce_scatter SUM               rank r gets block r of the summed blocks (block j = grid*(j+1))
 *   gather to rank 0                 rank 0 gets every rank's grid
 *   scatter from rank 0              rank r gets block r of rank 0's buffer (rank r's shape x 10)
 *
 * Each rank prints its grid before and after the all_reduces and checks every result against
 * what it computes itself (any rank can paint any rank's shape).
 *
 *   collectives_tour [-t N]           ranks as threads (default 2)
 *   ccrun -n 3 collectives_tour       ranks as processes (also mpirun -n 3 collectives_tour)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_ranks.h"

#define SIDE 11
#define CELLS (SIDE * SIDE)

/* The value rank r paints at (x, y): r+1 inside its shape, 0 elsewhere. */
static int painted(int r, int x, int y) {
  const int shift = (3 * r) % 5;
  if (r % 2 == 0) {
    const int dx = x - (3 + shift), dy = y - (3 + shift);
    return dx * dx + dy * dy <= 9 ? r + 1 : 0;
  }
  return (x >= 2 + shift && x <= 6 + shift && y >= 5 - shift / 2 && y <= 9 - shift / 2) ? r + 1 : 0;
}

static void paint(int r, int* grid) {
  for (int y = 0; y < SIDE; ++y)
    for (int x = 0; x < SIDE; ++x) grid[y * SIDE + x] = painted(r, x, y);
}

static void printGrid(int rank, const char* title, const int* grid) {
  char text[2048];
  int n = snprintf(text, sizeof(text), "%s\n", title);
  for (int y = 0; y < SIDE; ++y) {
    for (int x = 0; x < SIDE; ++x) {
      const int v = grid[y * SIDE + x];
      n += v == 0 ? snprintf(text + n, sizeof(text) - n, "  .") : snprintf(text + n, sizeof(text) - n, "%3d", v);
    }
    n += snprintf(text + n, sizeof(text) - n, "\n");
  }
  examplePrintf(rank, "%s", text);
}

/* Compares count cells; prints one line saying whether they match. Returns 1 if not. */
static int check(int rank, const char* what, const int* got, const int* want, int count) {
  for (int i = 0; i < count; ++i) {
    if (got[i] != want[i]) {
      examplePrintf(rank, "%-20s WRONG at cell %d (grid %d, x %d, y %d): %d, expected %d\n", what, i, i / CELLS,
                    i % SIDE, (i % CELLS) / SIDE, got[i], want[i]);
      return 1;
    }
  }
  examplePrintf(rank, "%-20s ok\n", what);
  return 0;
}

static int tour(int rank, int nranks, ccComm_t comm) {
  const size_t all = (size_t)nranks * CELLS;
  int mine[CELLS], result[CELLS], want[CELLS], shape[CELLS];
  int* many = malloc(all * sizeof(int));     /* nranks grids, sent or received */
  int* manyWant = malloc(all * sizeof(int)); /* what a buffer of nranks grids should hold */
  int wrong = 0;
  if (many == NULL || manyWant == NULL) return 1;

  paint(rank, mine);
  printGrid(rank, "my grid before:", mine);

  /* all_reduce SUM and MAX */
  EXAMPLE_CHECK(rank, comm, ccAllReduce(mine, result, CELLS, ccInt32, ccSum, comm, NULL));
  printGrid(rank, "after all_reduce SUM:", result);
  memset(want, 0, sizeof(want));
  for (int r = 0; r < nranks; ++r) {
    paint(r, shape);
    for (int i = 0; i < CELLS; ++i) want[i] += shape[i];
  }
  wrong += check(rank, "all_reduce SUM", result, want, CELLS);

  EXAMPLE_CHECK(rank, comm, ccAllReduce(mine, result, CELLS, ccInt32, ccMax, comm, NULL));
  printGrid(rank, "after all_reduce MAX:", result);
  memset(want, 0, sizeof(want));
  for (int r = 0; r < nranks; ++r) {
    paint(r, shape);
    for (int i = 0; i < CELLS; ++i) want[i] = shape[i] > want[i] ? shape[i] : want[i];
  }
  wrong += check(rank, "all_reduce MAX", result, want, CELLS);

  /* reduce SUM to rank 0: only rank 0's result buffer is written */
  EXAMPLE_CHECK(rank, comm, ccReduce(mine, result, CELLS, ccInt32, ccSum, 0, comm, NULL));
  memset(want, 0, sizeof(want));
  for (int r = 0; r < nranks; ++r) {
    paint(r, shape);
    for (int i = 0; i < CELLS; ++i) want[i] += shape[i];
  }
  if (rank == 0) wrong += check(rank, "reduce SUM to 0", result, want, CELLS);

  /* broadcast from rank 0: in place, every rank ends with rank 0's grid */
  memcpy(result, mine, sizeof(mine));
  EXAMPLE_CHECK(rank, comm, ccBroadcast(result, result, CELLS, ccInt32, 0, comm, NULL));
  paint(0, want);
  wrong += check(rank, "broadcast from 0", result, want, CELLS);

  /* all_gather: grid r of the result is rank r's grid */
  EXAMPLE_CHECK(rank, comm, ccAllGather(mine, many, CELLS, ccInt32, comm, NULL));
  for (int r = 0; r < nranks; ++r) paint(r, manyWant + (size_t)r * CELLS);
  wrong += check(rank, "all_gather", many, manyWant, (int)all);

  /* reduce_scatter: every rank sends nranks blocks (block j = its grid * (j+1)); rank r receives
   * the sum of everyone's block r, i.e. (sum of all grids) * (r+1) */
  for (int j = 0; j < nranks; ++j)
    for (int i = 0; i < CELLS; ++i) many[(size_t)j * CELLS + i] = mine[i] * (j + 1);
  EXAMPLE_CHECK(rank, comm, ccReduceScatter(many, result, CELLS, ccInt32, ccSum, comm, NULL));
  memset(want, 0, sizeof(want));
  for (int r = 0; r < nranks; ++r) {
    paint(r, shape);
    for (int i = 0; i < CELLS; ++i) want[i] += shape[i] * (rank + 1);
  }
  wrong += check(rank, "reduce_scatter SUM", result, want, CELLS);

  /* gather to rank 0: rank 0 receives every rank's grid (manyWant still holds them) */
  EXAMPLE_CHECK(rank, comm, ccGather(mine, many, CELLS, ccInt32, 0, comm, NULL));
  if (rank == 0) wrong += check(rank, "gather to 0", many, manyWant, (int)all);

  /* scatter from rank 0: rank 0 sends block r = rank r's shape x 10 */
  if (rank == 0)
    for (size_t i = 0; i < all; ++i) many[i] = manyWant[i] * 10;
  EXAMPLE_CHECK(rank, comm, ccScatter(many, result, CELLS, ccInt32, 0, comm, NULL));
  for (int i = 0; i < CELLS; ++i) want[i] = mine[i] * 10;
  wrong += check(rank, "scatter from 0", result, want, CELLS);

  free(many);
  free(manyWant);
  return wrong != 0;
}

int main(int argc, char** argv) { return exampleRun(argc, argv, "collectives_tour", 2, 1, tour); }
