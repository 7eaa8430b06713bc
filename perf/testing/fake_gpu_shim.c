/*
 * Test-only: preloaded (LD_PRELOAD) under a *_perf_fakegpu binary (fake_gpu.cc), it turns the GPU
 * communicators the binary asks for into host ones and checks what the binary passes: every
 * ordinal is 0 and every operation gets the rank's stream (fake_gpu.cc's token), which it replaces
 * by NULL for the host communicator. CC_FAKE_GPU_ASYNC_ERROR=1 makes ccCommGetAsyncError report
 * ccRemoteError, as a failed kernel would. A check that fails aborts the process. Never installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "collcomm.h"

static void* next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == NULL) {
    fprintf(stderr, "fake_gpu_shim: no %s after the shim\n", name);
    abort();
  }
  return f;
}

static ccStream_t hostStream(ccStream_t s, const char* op) {
  if (s != (ccStream_t)(uintptr_t)0xcc57) {
    fprintf(stderr, "fake_gpu_shim: %s was not given the rank's stream\n", op);
    abort();
  }
  return NULL;
}

ccResult_t ccCommInitAll(ccComm_t* comms, int n, const int* devlist) {
  ccResult_t (*f)(ccComm_t*, int, const int*) = next("ccCommInitAll");
  for (int i = 0; i < n; ++i) {
    if (devlist == NULL || devlist[i] != 0) {
      fprintf(stderr, "fake_gpu_shim: ccCommInitAll was not given device 0 for rank %d\n", i);
      abort();
    }
  }
  return f(comms, n, NULL);
}

ccResult_t ccCommInitRankConfig(ccComm_t* comm, int nranks, ccUniqueId id, int rank, ccConfig_t* config) {
  ccResult_t (*f)(ccComm_t*, int, ccUniqueId, int, ccConfig_t*) = next("ccCommInitRankConfig");
  ccConfig_t host = *config;
  if (host.device != 0) {
    fprintf(stderr, "fake_gpu_shim: ccCommInitRankConfig was given device %d, not 0\n", host.device);
    abort();
  }
  host.device = CC_DEVICE_HOST;
  return f(comm, nranks, id, rank, &host);
}

ccResult_t ccCommGetAsyncError(ccComm_t comm, ccResult_t* asyncError) {
  ccResult_t (*f)(ccComm_t, ccResult_t*) = next("ccCommGetAsyncError");
  const char* fail = getenv("CC_FAKE_GPU_ASYNC_ERROR");
  if (fail != NULL && fail[0] == '1') {
    *asyncError = ccRemoteError;
    return ccSuccess;
  }
  return f(comm, asyncError);
}

ccResult_t ccAllReduce(const void* s, void* r, size_t n, ccDataType_t t, ccRedOp_t op, ccComm_t c, ccStream_t st) {
  ccResult_t (*f)(const void*, void*, size_t, ccDataType_t, ccRedOp_t, ccComm_t, ccStream_t) = next("ccAllReduce");
  return f(s, r, n, t, op, c, hostStream(st, "ccAllReduce"));
}

ccResult_t ccReduceScatter(const void* s, void* r, size_t n, ccDataType_t t, ccRedOp_t op, ccComm_t c, ccStream_t st) {
  ccResult_t (*f)(const void*, void*, size_t, ccDataType_t, ccRedOp_t, ccComm_t, ccStream_t) = next("ccReduceScatter");
  return f(s, r, n, t, op, c, hostStream(st, "ccReduceScatter"));
}

ccResult_t ccAllGather(const void* s, void* r, size_t n, ccDataType_t t, ccComm_t c, ccStream_t st) {
  ccResult_t (*f)(const void*, void*, size_t, ccDataType_t, ccComm_t, ccStream_t) = next("ccAllGather");
  return f(s, r, n, t, c, hostStream(st, "ccAllGather"));
}

ccResult_t ccBroadcast(const void* s, void* r, size_t n, ccDataType_t t, int root, ccComm_t c, ccStream_t st) {
  ccResult_t (*f)(const void*, void*, size_t, ccDataType_t, int, ccComm_t, ccStream_t) = next("ccBroadcast");
  return f(s, r, n, t, root, c, hostStream(st, "ccBroadcast"));
}

ccResult_t ccReduce(const void* s, void* r, size_t n, ccDataType_t t, ccRedOp_t op, int root, ccComm_t c,
                    ccStream_t st) {
  ccResult_t (*f)(const void*, void*, size_t, ccDataType_t, ccRedOp_t, int, ccComm_t, ccStream_t) = next("ccReduce");
  return f(s, r, n, t, op, root, c, hostStream(st, "ccReduce"));
}
