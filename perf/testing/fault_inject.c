/*
 * Test-only: preloaded (LD_PRELOAD) under a perf binary, it breaks ccAllReduce so that the perf
 * tests can see the harness count wrong elements. CC_PERF_FAULT selects the fault:
 *   corrupt  flip one bit of the first element of every result
 *   skip     return success without running the operation (a stale or cached result)
 * Anything else (or unset) passes calls through unchanged. Never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "collcomm.h"

typedef ccResult_t (*AllReduceFn)(const void*, void*, size_t, ccDataType_t, ccRedOp_t, ccComm_t, ccStream_t);

ccResult_t ccAllReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op,
                       ccComm_t comm, ccStream_t stream) {
  AllReduceFn real = (AllReduceFn)dlsym(RTLD_NEXT, "ccAllReduce");
  const char* mode = getenv("CC_PERF_FAULT");
  if (real == NULL) return ccInternalError;
  if (mode != NULL && strcmp(mode, "skip") == 0) return ccSuccess;
  ccResult_t r = real(sendbuff, recvbuff, count, datatype, op, comm, stream);
  if (r == ccSuccess && count > 0 && mode != NULL && strcmp(mode, "corrupt") == 0)
    ((unsigned char*)recvbuff)[0] ^= 0x10;
  return r;
}
