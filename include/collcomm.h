/*
 * collcomm — collective communication on GPUs and host memory.
 *
 * The only public header. The API follows NCCL's (argument order, in-place rules, per-rank counts
 * for AllGather/ReduceScatter, group semantics, result codes and enum values) with the prefix
 * `nccl` replaced by `cc`, so a port is a rename. Compiles as C11 and C++; needs no CUDA header.
 */
#ifndef COLLCOMM_H_
#define COLLCOMM_H_

#include <stddef.h>
#include <stdint.h>

#define CC_MAJOR 0
#define CC_MINOR 1
#define CC_PATCH 0
#define CC_SUFFIX ""
#define CC_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define CC_VERSION_CODE CC_VERSION(CC_MAJOR, CC_MINOR, CC_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* Same type as cudaStream_t, so no CUDA header is needed. Host communicators take NULL. */
typedef struct CUstream_st* ccStream_t;

/* Opaque communicator handle. */
typedef struct ccComm* ccComm_t;

#define CC_UNIQUE_ID_BYTES 128
/* Made by ccGetUniqueId on one process and passed to every rank (by any means) before init. */
typedef struct {
  char internal[CC_UNIQUE_ID_BYTES];
} ccUniqueId;

typedef enum {
  ccSuccess = 0,
  ccUnhandledCudaError = 1,
  ccSystemError = 2,
  ccInternalError = 3,
  ccInvalidArgument = 4,
  ccInvalidUsage = 5,
  ccRemoteError = 6,
  ccInProgress = 7,
  ccTimeout = 8,
  ccNumResults = 9
} ccResult_t;

typedef enum {
  ccInt8 = 0,
  ccChar = 0,
  ccUint8 = 1,
  ccInt32 = 2,
  ccInt = 2,
  ccUint32 = 3,
  ccInt64 = 4,
  ccUint64 = 5,
  ccFloat16 = 6,
  ccHalf = 6,
  ccFloat32 = 7,
  ccFloat = 7,
  ccFloat64 = 8,
  ccDouble = 8,
  ccBfloat16 = 9,
  ccFloat8e4m3 = 10,
  ccFloat8e5m2 = 11,
  ccNumTypes = 12
} ccDataType_t;

/* Built-in ops; values from ccNumOps up are handles made by ccRedOpCreatePreMulSum. */
typedef enum { ccNumOps_dummy = 5 } ccRedOp_dummy_t;
typedef enum {
  ccSum = 0,
  ccProd = 1,
  ccMax = 2,
  ccMin = 3,
  ccAvg = 4,
  ccNumOps = 5,
  ccMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ccRedOp_dummy_t))
} ccRedOp_t;

typedef enum {
  ccScalarDevice = 0,        /* the scalar is in device memory (host memory for host communicators) */
  ccScalarHostImmediate = 1  /* the scalar is in host memory, read when the op is created */
} ccScalarResidence_t;

/* A communicator bound to host memory instead of a CUDA device. */
#define CC_DEVICE_HOST (-2)
#define CC_SPLIT_NOCOLOR (-1)

#define CC_CONFIG_UNDEF_INT (-2147483647 - 1)
#define CC_CONFIG_UNDEF_PTR NULL

/*
 * Versioned communicator configuration. Initialise with CC_CONFIG_INITIALIZER, then set the
 * fields you care about; fields left undefined take their defaults (and COLLCOMM_* variables).
 */
typedef struct ccConfig_v1 {
  size_t size;         /* sizeof(ccConfig_t), set by the initializer */
  unsigned int magic;  /* set by the initializer */
  unsigned int version;
  int blocking; /* 1 (default): calls return when done. 0: init, operations, ccGroupEnd and ccCommFinalize
                   may return ccInProgress; poll ccCommGetAsyncError until it is no longer ccInProgress */
  int device;   /* CC_DEVICE_HOST (the default), or a CUDA ordinal: a GPU communicator (builds with CUDA;
                   its ranks are threads of one process, several may share a GPU), whose operations take
                   device buffers and a cudaStream_t and return once enqueued */
  const char* commName;  /* shown in logs and errors */
  int timeout;           /* seconds any wait may take (init included); default COLLCOMM_TIMEOUT */
  int minChannels;
  int maxChannels;
  int splitShare; /* accepted for NCCL compatibility; resources are not shared yet */
} ccConfig_t;

#define CC_CONFIG_MAGIC 0xcc0fc0fcu
#define CC_CONFIG_INITIALIZER                                                                        \
  {                                                                                                  \
    sizeof(ccConfig_t), CC_CONFIG_MAGIC, CC_VERSION(CC_MAJOR, CC_MINOR, CC_PATCH), CC_CONFIG_UNDEF_INT, \
        CC_CONFIG_UNDEF_INT, CC_CONFIG_UNDEF_PTR, CC_CONFIG_UNDEF_INT, CC_CONFIG_UNDEF_INT,           \
        CC_CONFIG_UNDEF_INT, CC_CONFIG_UNDEF_INT                                                     \
  }

/* Library version as CC_VERSION_CODE. */
ccResult_t ccGetVersion(int* version);

/* Makes a new id and starts the rendezvous service for it in this process (which must stay alive
 * until every rank has joined). With COLLCOMM_COMM_ID=<host>:<port> set, no service is started. */
ccResult_t ccGetUniqueId(ccUniqueId* uniqueId);

/* Collective over all nranks: every rank calls it with the same id. Blocks until all have joined
 * or the timeout passes; inside ccGroupStart/End (several ranks from one thread) it runs at
 * ccGroupEnd; with config->blocking = 0 it returns ccInProgress at once with *comm set, and
 * ccCommGetAsyncError(*comm) says when it is done. */
ccResult_t ccCommInitRankConfig(ccComm_t* comm, int nranks, ccUniqueId commId, int rank, ccConfig_t* config);
ccResult_t ccCommInitRank(ccComm_t* comm, int nranks, ccUniqueId commId, int rank);
/* ndev communicators in this process; devlist NULL (or entries CC_DEVICE_HOST) makes host ones,
 * CUDA ordinals GPU ones (the same ordinal may repeat: ranks sharing a GPU). */
ccResult_t ccCommInitAll(ccComm_t* comms, int ndev, const int* devlist);

/* Collective over the parent: ranks with the same color form a new communicator, ordered by key
 * (then parent rank). CC_SPLIT_NOCOLOR gives *newcomm = NULL. */
ccResult_t ccCommSplit(ccComm_t comm, int color, int key, ccComm_t* newcomm, ccConfig_t* config);

/* A new communicator of comm's ranks minus excludeRanksList (NCCL 2.27's ncclCommShrink): called by
 * every rank not excluded, with the same list (in any order), never by an excluded rank, which may
 * be dead. The remaining ranks keep their order and are renumbered from 0. config NULL: comm's.
 * shrinkFlags: CC_SHRINK_DEFAULT (comm must have no operation in flight or queued; it stays usable
 * by all its ranks) or CC_SHRINK_ABORT (first stops comm's operations in flight, on any thread,
 * and drops its queued ones, as after a failure: comm is then revoked, see ccCommRevoke). Runs to
 * completion (a non-blocking comm's too); inside a group, CC_SHRINK_DEFAULT runs with comm's share
 * of the group as ccCommSplit does. A rank whose list differs gets ccInvalidUsage on the ranks that
 * hear of it where they agree on the lowest remaining rank; otherwise the shrinks end at the
 * timeout, naming a rank that never answered. A revoked (ccCommRevoke) comm cannot be shrunk. */
#define CC_SHRINK_DEFAULT 0
#define CC_SHRINK_ABORT 1
ccResult_t ccCommShrink(ccComm_t comm, int* excludeRanksList, int excludeRanksCount, ccComm_t* newcomm,
                        ccConfig_t* config, int shrinkFlags);

/* Flushes queued work; no operation may follow. Non-blocking: ccInProgress until
 * ccCommGetAsyncError says the work is done. */
ccResult_t ccCommFinalize(ccComm_t comm);
/* Frees the communicator, waiting first for its queued work (a non-blocking init or operation;
 * each step is bounded by the timeout). */
ccResult_t ccCommDestroy(ccComm_t comm);
/* Stops everything in flight, from any thread and any state (an init in progress included), and
 * frees the communicator. */
ccResult_t ccCommAbort(ccComm_t comm);
/* Stops the communicator's operations without freeing it, from any thread at any time (also while
 * another thread is inside one of its calls): operations in flight end within milliseconds and
 * later ones are refused, all with ccInvalidUsage; the handle stays valid (ccGetLastError,
 * ccCommGetAsyncError, ccCommCount...) until ccCommDestroy or ccCommAbort frees it. Local: peers
 * learn of it when an operation of theirs waits on this rank and it is stopped or freed.
 * revokeFlags: CC_REVOKE_DEFAULT (no other flag is defined). */
#define CC_REVOKE_DEFAULT 0
ccResult_t ccCommRevoke(ccComm_t comm, int revokeFlags);
/* *asyncError: ccInProgress while the communicator's queued work runs, then ccSuccess or the first
 * failure (described by ccGetLastError(comm)). */
ccResult_t ccCommGetAsyncError(ccComm_t comm, ccResult_t* asyncError);

const char* ccGetErrorString(ccResult_t result);
/* The sentence describing the last error on this communicator (NULL: on this thread). */
const char* ccGetLastError(ccComm_t comm);

ccResult_t ccCommCount(const ccComm_t comm, int* count);
ccResult_t ccCommDevice(const ccComm_t comm, int* device);
ccResult_t ccCommUserRank(const ccComm_t comm, int* rank);

/* The plan this rank would follow for one collective, made as the call would make it, without
 * running anything (collcomm's own: NCCL has no such call). Written to json as one JSON object on
 * one line, NUL-terminated: the collective, sizes, type, root, ranks, algorithm, protocol, channels,
 * step and chunk sizes, streaming flags and the ring order of each channel used (fields in
 * docs/env.md, "Plans"). collective: "AllReduce", "Broadcast", "Reduce", "AllGather" or
 * "ReduceScatter", in any case; count and root as that call takes them (root only for Broadcast
 * and Reduce, ignored otherwise). *needed (NULL allowed when json is given) gets the bytes the JSON
 * takes with its NUL, also when jsonBytes is too small; json NULL with jsonBytes 0 asks only that.
 * ccInvalidArgument, with a sentence in ccGetLastError: comm is not a live communicator;
 * collective is NULL or not one of those names (point-to-point kinds have no plan); datatype is
 * not a ccDataType_t; root is out of range for Broadcast or Reduce; count is so large that
 * nranks*count elements overflow; json is NULL with jsonBytes > 0, or json and needed are both
 * NULL; jsonBytes is smaller than *needed. ccInvalidUsage: the communicator was made in a group
 * whose ccGroupEnd has not run yet, a non-blocking communicator's queued work is still in progress,
 * or the communicator has failed. */
ccResult_t ccCommDescribePlan(ccComm_t comm, const char* collective, size_t count, ccDataType_t datatype, int root,
                              char* json, size_t jsonBytes, size_t* needed);

/* op = scalar × x, summed. residence says where scalar lives. */
ccResult_t ccRedOpCreatePreMulSum(ccRedOp_t* op, void* scalar, ccDataType_t datatype, ccScalarResidence_t residence,
                                  ccComm_t comm);
ccResult_t ccRedOpDestroy(ccRedOp_t op, ccComm_t comm);

/* Memory for communication buffers (NCCL's ncclMemAlloc/ncclMemFree): *ptr gets size bytes of the
 * CUDA device current on the calling thread, or, where there is none (a build without CUDA, no
 * usable device), page-aligned host memory. size 0 gives *ptr = NULL. ccMemFree takes only what
 * ccMemAlloc gave (or NULL, which it ignores); anything else is ccInvalidArgument. */
ccResult_t ccMemAlloc(void** ptr, size_t size);
ccResult_t ccMemFree(void* ptr);
/* Registers [buff, buff + size) with comm (NCCL's ncclCommRegister); *handle names the registration
 * for ccCommDeregister. On a GPU communicator buff must be memory of its device. A registration is
 * a hint: operations on buffers that are not registered run the same, and today none runs
 * differently on registered ones. Registrations end with ccCommDeregister or with the
 * communicator. ccInvalidArgument, with a sentence: NULL buff or handle, size 0, another device's
 * memory; a handle that is not a live registration of comm. */
ccResult_t ccCommRegister(const ccComm_t comm, void* buff, size_t size, void** handle);
ccResult_t ccCommDeregister(const ccComm_t comm, void* handle);

ccResult_t ccReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op, int root,
                    ccComm_t comm, ccStream_t stream);
ccResult_t ccBroadcast(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root,
                       ccComm_t comm, ccStream_t stream);
/* NCCL's legacy broadcast: in place, buff is the root's data and every rank's result. */
ccResult_t ccBcast(void* buff, size_t count, ccDataType_t datatype, int root, ccComm_t comm, ccStream_t stream);
ccResult_t ccAllReduce(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccRedOp_t op,
                       ccComm_t comm, ccStream_t stream);
/* recvcount elements per rank; sendbuff holds nranks*recvcount. */
ccResult_t ccReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ccDataType_t datatype, ccRedOp_t op,
                           ccComm_t comm, ccStream_t stream);
/* sendcount elements per rank; recvbuff holds nranks*sendcount. */
ccResult_t ccAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ccDataType_t datatype, ccComm_t comm,
                       ccStream_t stream);
/* count elements to and from each rank; both buffers hold nranks*count. */
ccResult_t ccAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, ccComm_t comm,
                      ccStream_t stream);
/* count elements from each rank; recvbuff (root only) holds nranks*count. */
ccResult_t ccGather(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                    ccStream_t stream);
/* count elements to each rank; sendbuff (root only) holds nranks*count. */
ccResult_t ccScatter(const void* sendbuff, void* recvbuff, size_t count, ccDataType_t datatype, int root, ccComm_t comm,
                     ccStream_t stream);
ccResult_t ccSend(const void* sendbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm,
                  ccStream_t stream);
ccResult_t ccRecv(void* recvbuff, size_t count, ccDataType_t datatype, int peer, ccComm_t comm, ccStream_t stream);

/* Operations (and inits, splits) between ccGroupStart and ccGroupEnd are queued and run together by
 * ccGroupEnd, each communicator's on its own thread; with non-blocking communicators ccGroupEnd
 * returns ccInProgress. A group may not mix blocking and non-blocking communicators. */
ccResult_t ccGroupStart(void);
ccResult_t ccGroupEnd(void);

/* What ccGroupSimulateEnd reports. Initialise with CC_SIM_INFO_INITIALIZER. */
typedef struct ccSimInfo_v1 {
  size_t size;         /* sizeof(ccSimInfo_t), set by the initializer */
  unsigned int magic;  /* set by the initializer */
  unsigned int version;
  float estimatedTime; /* us: the group's estimated time, its slowest communicator's share */
} ccSimInfo_t;

#define CC_SIM_INFO_MAGIC 0xcc51a1f0u
#define CC_SIM_INFO_INITIALIZER \
  { sizeof(ccSimInfo_t), CC_SIM_INFO_MAGIC, CC_VERSION(CC_MAJOR, CC_MINOR, CC_PATCH), 0.0f }

/* Ends the group like ccGroupEnd but runs nothing: every queued operation is planned as ccGroupEnd
 * would plan it and its time estimated by the cost model (docs/planning.md); the operations are
 * then dropped, no buffer is read or written and no peer is contacted, so each rank may simulate
 * alone. A communicator's operations add up; communicators run side by side, so the group takes
 * its slowest one's time. Host communicators only for now. ccInvalidArgument: simInfo is NULL or
 * not from CC_SIM_INFO_INITIALIZER. ccInvalidUsage: no group is open, the group is nested (the
 * inner ccGroupEnd would run nothing either), it creates or splits communicators, it holds a GPU
 * communicator's operations, or a non-blocking communicator of it still has work in progress; the
 * group is then left open as it was, for ccGroupEnd to run. */
ccResult_t ccGroupSimulateEnd(ccSimInfo_t* simInfo);

#ifdef __cplusplus
}
#endif

#endif /* COLLCOMM_H_ */
