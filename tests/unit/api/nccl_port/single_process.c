/*
 * NCCL-style C code, ported by including collcomm/nccl_compat.h instead of nccl.h and linking
 * libcollcomm: the single-process pattern of NCCL's examples (one thread drives every rank through
 * ncclCommInitAll and groups). The port's only changes: host buffers instead of cudaMalloc, and a
 * NULL stream instead of a cudaStream_t (host communicators complete before ncclGroupEnd returns).
 * Exits 0 when every result is exact.
 */
#include <collcomm/nccl_compat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCCLCHECK(cmd)                                                                                  \
  do {                                                                                                  \
    ncclResult_t res_ = (cmd);                                                                          \
    if (res_ != ncclSuccess) {                                                                          \
      printf("Failed, NCCL error %s:%d '%s': %s\n", __FILE__, __LINE__, ncclGetErrorString(res_),       \
             ncclGetLastError(NULL));                                                                   \
      exit(EXIT_FAILURE);                                                                               \
    }                                                                                                   \
  } while (0)

#define EXPECT(cond, ...)             \
  do {                                \
    if (!(cond)) {                    \
      printf("%s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);            \
      printf("\n");                   \
      exit(EXIT_FAILURE);             \
    }                                 \
  } while (0)

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 13, 0)
#error "this sample uses ncclGetLastError (NCCL 2.13)"
#endif

enum { kDevs = 4, kCount = 1000 };

int main(void) {
  alarm(60); /* the watchdog: a hang ends the process */
  int version = 0;
  NCCLCHECK(ncclGetVersion(&version));
  EXPECT(version == NCCL_VERSION_CODE, "ncclGetVersion gave %d", version);

  ncclComm_t comms[kDevs];
  NCCLCHECK(ncclCommInitAll(comms, kDevs, NULL));
  for (int i = 0; i < kDevs; ++i) {
    int rank = -1, count = 0, dev = 0;
    NCCLCHECK(ncclCommUserRank(comms[i], &rank));
    NCCLCHECK(ncclCommCount(comms[i], &count));
    NCCLCHECK(ncclCommCuDevice(comms[i], &dev));
    EXPECT(rank == i && count == kDevs && dev == CC_DEVICE_HOST, "rank %d count %d device %d", rank, count, dev);
  }

  float* sendbuff[kDevs];
  float* recvbuff[kDevs];
  for (int i = 0; i < kDevs; ++i) {
    sendbuff[i] = (float*)malloc(kCount * sizeof(float));
    recvbuff[i] = (float*)malloc(kCount * sizeof(float));
    for (int j = 0; j < kCount; ++j) sendbuff[i][j] = (float)(i + j % 7);
    memset(recvbuff[i], 0, kCount * sizeof(float));
  }

  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < kDevs; ++i)
    NCCLCHECK(ncclAllReduce(sendbuff[i], recvbuff[i], kCount, ncclFloat, ncclSum, comms[i], NULL));
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < kDevs; ++i)
    for (int j = 0; j < kCount; ++j) {
      const float want = (float)(kDevs * (kDevs - 1) / 2 + kDevs * (j % 7));
      EXPECT(recvbuff[i][j] == want, "allreduce: rank %d [%d] = %g, want %g", i, j, recvbuff[i][j], want);
    }

  /* ncclBroadcast out of place from rank 1, then the legacy in-place ncclBcast from rank 3. */
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < kDevs; ++i)
    NCCLCHECK(ncclBroadcast(sendbuff[i], recvbuff[i], kCount, ncclFloat32, 1, comms[i], NULL));
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < kDevs; ++i)
    for (int j = 0; j < kCount; ++j)
      EXPECT(recvbuff[i][j] == sendbuff[1][j], "broadcast: rank %d [%d] = %g", i, j, recvbuff[i][j]);
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < kDevs; ++i) NCCLCHECK(ncclBcast(sendbuff[i], kCount, ncclFloat, 3, comms[i], NULL));
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < kDevs; ++i)
    for (int j = 0; j < kCount; ++j)
      EXPECT(sendbuff[i][j] == (float)(3 + j % 7), "bcast: rank %d [%d] = %g", i, j, sendbuff[i][j]);

  /* A bad call is refused with a sentence, and the communicator stays usable. */
  EXPECT(ncclAllReduce(NULL, recvbuff[0], kCount, ncclFloat, ncclSum, comms[0], NULL) == ncclInvalidArgument,
         "a NULL sendbuff was accepted");
  EXPECT(strstr(ncclGetLastError(comms[0]), "sendbuff") != NULL, "last error: %s", ncclGetLastError(comms[0]));
  EXPECT(strcmp(ncclGetErrorString(ncclTimeout), ncclGetErrorString(ncclSuccess)) != 0, "error strings");

  for (int i = 0; i < kDevs; ++i) {
    ncclResult_t state = ncclInternalError;
    NCCLCHECK(ncclCommGetAsyncError(comms[i], &state));
    EXPECT(state == ncclSuccess, "rank %d: async error %s", i, ncclGetErrorString(state));
  }
  for (int i = 0; i < kDevs; ++i) {
    NCCLCHECK(ncclCommDestroy(comms[i]));
    free(sendbuff[i]);
    free(recvbuff[i]);
  }
  printf("nccl_port_single_process: OK\n");
  return 0;
}
