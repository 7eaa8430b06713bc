/*
 * A C user program of an installed collcomm: joins its job with ccLaunchCommInit (libcollcomm_launch)
 * and checks one all-reduce exactly. Alone it is a job of one; under ccrun -n N, N ranks.
 * Prints "consumer_c rank R of N: sum S correct" and exits 0, else says what was wrong and exits 1.
 */
#include <collcomm.h>
#include <collcomm_launch.h>
#include <stdio.h>

int main(void) {
  int version = 0;
  if (ccGetVersion(&version) != ccSuccess || version != CC_VERSION_CODE) {
    fprintf(stderr, "consumer_c: the library is version %d, the headers %d\n", version, CC_VERSION_CODE);
    return 1;
  }
  ccComm_t comm;
  ccLaunchInfo info;
  if (ccLaunchCommInit(&comm, NULL, &info) != ccSuccess) return 1; /* it said why */
  /* Every rank sends rank+1 in 1001 elements: each sum is n(n+1)/2, exact in int64. */
  enum { kCount = 1001 };
  static long long send[kCount], recv[kCount];
  for (int i = 0; i < kCount; ++i) send[i] = info.rank + 1;
  ccResult_t r = ccAllReduce(send, recv, kCount, ccInt64, ccSum, comm, NULL);
  const long long want = (long long)info.size * (info.size + 1) / 2;
  int wrong = r != ccSuccess;
  for (int i = 0; i < kCount && !wrong; ++i) wrong = recv[i] != want;
  if (ccCommDestroy(comm) != ccSuccess) wrong = 1;
  printf("consumer_c rank %d of %d: sum %lld %s\n", info.rank, info.size, recv[kCount - 1],
         wrong ? "WRONG" : "correct");
  return wrong;
}
