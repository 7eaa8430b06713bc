/* The loader's search beside libcollcomm.so, seen from a program linked against it as users link:
 * COLLCOMM_NET_PLUGIN=socket finds libcollcomm-net-socket.so in the folder of libcollcomm.so (the
 * program's RUNPATH does not apply to a dlopen made by libcollcomm.so), and two ranks run an
 * allreduce over it with exact results; then a short name found nowhere fails ccCommInitAll with
 * ccInvalidUsage and a sentence naming the file it looked for. Exits 0 when all holds.
 */
#include <collcomm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPECT(cond, ...)                        \
  do {                                           \
    if (!(cond)) {                               \
      printf("%s:%d: ", __FILE__, __LINE__);     \
      printf(__VA_ARGS__);                       \
      printf(" (last error: %s)\n", ccGetLastError(NULL)); \
      exit(EXIT_FAILURE);                        \
    }                                            \
  } while (0)

enum { kRanks = 2, kCount = 4099 };

int main(void) {
  alarm(60); /* the watchdog: a hang ends the process */
  setenv("COLLCOMM_P2P_DISABLE", "1", 1);
  setenv("COLLCOMM_SHM_DISABLE", "1", 1);
  setenv("COLLCOMM_TIMEOUT", "30", 1);
  setenv("COLLCOMM_NET_PLUGIN", "socket", 1);

  ccComm_t comms[kRanks];
  ccResult_t r = ccCommInitAll(comms, kRanks, NULL);
  EXPECT(r == ccSuccess, "ccCommInitAll over COLLCOMM_NET_PLUGIN=socket gave %d", (int)r);
  static float send[kRanks][kCount], recv[kRanks][kCount];
  for (int i = 0; i < kRanks; ++i)
    for (int j = 0; j < kCount; ++j) send[i][j] = (float)(j % 97 + i);
  EXPECT(ccGroupStart() == ccSuccess, "ccGroupStart");
  for (int i = 0; i < kRanks; ++i)
    EXPECT(ccAllReduce(send[i], recv[i], kCount, ccFloat, ccSum, comms[i], NULL) == ccSuccess, "ccAllReduce");
  EXPECT(ccGroupEnd() == ccSuccess, "ccGroupEnd");
  for (int i = 0; i < kRanks; ++i)
    for (int j = 0; j < kCount; ++j)
      EXPECT(recv[i][j] == (float)(2 * (j % 97) + 1), "rank %d element %d is %g", i, j, recv[i][j]);
  for (int i = 0; i < kRanks; ++i) EXPECT(ccCommDestroy(comms[i]) == ccSuccess, "ccCommDestroy");

  setenv("COLLCOMM_NET_PLUGIN", "no-such-net", 1);
  r = ccCommInitAll(comms, kRanks, NULL);
  EXPECT(r == ccInvalidUsage, "ccCommInitAll over a plugin found nowhere gave %d", (int)r);
  EXPECT(strstr(ccGetLastError(NULL), "no library libcollcomm-net-no-such-net.so was found") != NULL,
         "the sentence does not name the file");
  printf("plugin loaded by name beside libcollcomm.so; a missing one refused\n");
  return 0;
}
