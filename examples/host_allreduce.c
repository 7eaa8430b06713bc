/*
 * The smallest collcomm program: two host ranks, driven by one thread, sum a vector.
 *
 * ccCommInitAll makes both ranks' communicators in this process; inside ccGroupStart/ccGroupEnd
 * the two calls run together (a host call otherwise returns only when its operation is done, so
 * one thread could not play both ranks). Written in C to show the header needs nothing else.
 */
#include <collcomm.h>
#include <stdio.h>
#include <stdlib.h>

#define NRANKS 2
#define COUNT 8

#define CHECK(call)                                                                          \
  do {                                                                                       \
    ccResult_t r_ = (call);                                                                  \
    if (r_ != ccSuccess) {                                                                   \
      fprintf(stderr, "%s failed: %s: %s\n", #call, ccGetErrorString(r_), ccGetLastError(NULL)); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(void) {
  ccComm_t comms[NRANKS];
  float send[NRANKS][COUNT], recv[NRANKS][COUNT];
  CHECK(ccCommInitAll(comms, NRANKS, NULL));

  for (int r = 0; r < NRANKS; ++r)
    for (int i = 0; i < COUNT; ++i) send[r][i] = (float)((r + 1) * (i + 1));

  CHECK(ccGroupStart());
  for (int r = 0; r < NRANKS; ++r) CHECK(ccAllReduce(send[r], recv[r], COUNT, ccFloat32, ccSum, comms[r], NULL));
  CHECK(ccGroupEnd());

  int wrong = 0;
  for (int r = 0; r < NRANKS; ++r) {
    printf("rank %d: in ", r);
    for (int i = 0; i < COUNT; ++i) printf("%4.0f", send[r][i]);
    printf("  ->  sum ");
    for (int i = 0; i < COUNT; ++i) {
      printf("%4.0f", recv[r][i]);
      float want = 0;
      for (int q = 0; q < NRANKS; ++q) want += (float)((q + 1) * (i + 1));
      wrong += recv[r][i] != want;
    }
    printf("\n");
  }
  for (int r = 0; r < NRANKS; ++r) CHECK(ccCommDestroy(comms[r]));
  printf(wrong == 0 ? "allreduce across %d host ranks: correct\n" : "allreduce: %d wrong values\n",
         wrong == 0 ? NRANKS : wrong);
  return wrong == 0 ? 0 : 1;
}
