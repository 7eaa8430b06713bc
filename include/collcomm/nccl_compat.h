/*
 * collcomm/nccl_compat.h — NCCL's names for collcomm's API, so NCCL code ports by including this
 * header instead of nccl.h and linking libcollcomm instead of libnccl.
 *
 * The rule: every NCCL name whose collcomm counterpart exists is defined here as that name with
 * `nccl`/`NCCL_` replaced by `cc`/`CC_` (types as typedefs, enumerators, functions and macros as
 * macros). NCCL names collcomm has no counterpart for are deliberately left undefined, so a port
 * that uses one fails to compile where it does instead of misbehaving at run time.
 * docs/nccl_compat.md lists those names and every behaviour that differs from NCCL's (the extra
 * ncclTimeout result, host communicators and CC_DEVICE_HOST, the NULL stream, ...).
 *
 * Compiles as C11 and C++; needs no CUDA header (cudaStream_t values pass through: ccStream_t is
 * the same type).
 */
#ifndef COLLCOMM_NCCL_COMPAT_H_
#define COLLCOMM_NCCL_COMPAT_H_

#ifdef NCCL_H_
#error "collcomm/nccl_compat.h replaces nccl.h: include one or the other, not both"
#endif
/* Any later #include <nccl.h> (from another header of the port) becomes a no-op. */
#define NCCL_H_

#include "collcomm.h"

/* The NCCL API level this header provides: NCCL 2.18's, plus the later ncclCommRegister,
 * ncclCommDeregister, ncclMemAlloc, ncclMemFree, ncclAlltoAll, ncclGather, ncclScatter and the fp8
 * types. Code that tests NCCL_VERSION_CODE for newer features keeps to what exists here. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 18
#define NCCL_PATCH 0
#define NCCL_SUFFIX ""
/* NCCL's encoding: two digits for the minor version from 2.9 on, one before. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

/* Types. */
typedef ccComm_t ncclComm_t;
typedef ccUniqueId ncclUniqueId;
typedef ccResult_t ncclResult_t;
typedef ccDataType_t ncclDataType_t;
typedef ccRedOp_dummy_t ncclRedOp_dummy_t;
typedef ccRedOp_t ncclRedOp_t;
typedef ccScalarResidence_t ncclScalarResidence_t;
typedef ccConfig_t ncclConfig_t;
typedef ccSimInfo_t ncclSimInfo_t; /* NCCL 2.22's, above this header's API level: for ports that use it */

/* Constants and initialisers. */
#define NCCL_COMM_NULL NULL
#define NCCL_UNIQUE_ID_BYTES CC_UNIQUE_ID_BYTES
#define NCCL_CONFIG_UNDEF_INT CC_CONFIG_UNDEF_INT
#define NCCL_CONFIG_UNDEF_PTR CC_CONFIG_UNDEF_PTR
#define NCCL_SPLIT_NOCOLOR CC_SPLIT_NOCOLOR
#define NCCL_CONFIG_INITIALIZER CC_CONFIG_INITIALIZER

/* ncclResult_t */
#define ncclSuccess ccSuccess
#define ncclUnhandledCudaError ccUnhandledCudaError
#define ncclSystemError ccSystemError
#define ncclInternalError ccInternalError
#define ncclInvalidArgument ccInvalidArgument
#define ncclInvalidUsage ccInvalidUsage
#define ncclRemoteError ccRemoteError
#define ncclInProgress ccInProgress
#define ncclTimeout ccTimeout
#define ncclNumResults ccNumResults

/* ncclDataType_t */
#define ncclInt8 ccInt8
#define ncclChar ccChar
#define ncclUint8 ccUint8
#define ncclInt32 ccInt32
#define ncclInt ccInt
#define ncclUint32 ccUint32
#define ncclInt64 ccInt64
#define ncclUint64 ccUint64
#define ncclFloat16 ccFloat16
#define ncclHalf ccHalf
#define ncclFloat32 ccFloat32
#define ncclFloat ccFloat
#define ncclFloat64 ccFloat64
#define ncclDouble ccDouble
#define ncclBfloat16 ccBfloat16
#define ncclFloat8e4m3 ccFloat8e4m3
#define ncclFloat8e5m2 ccFloat8e5m2
#define ncclNumTypes ccNumTypes

/* ncclRedOp_t */
#define ncclNumOps_dummy ccNumOps_dummy
#define ncclSum ccSum
#define ncclProd ccProd
#define ncclMax ccMax
#define ncclMin ccMin
#define ncclAvg ccAvg
#define ncclNumOps ccNumOps
#define ncclMaxRedOp ccMaxRedOp

/* ncclScalarResidence_t */
#define ncclScalarDevice ccScalarDevice
#define ncclScalarHostImmediate ccScalarHostImmediate

/* Functions. ncclGetVersion reports the NCCL API level above (code gates features on it);
 * ccGetVersion reports collcomm's own version. */
static inline ncclResult_t ncclGetVersion(int* version) {
  ccResult_t r = ccGetVersion(version);
  if (r == ccSuccess) *version = NCCL_VERSION_CODE;
  return r;
}
#define ncclGetUniqueId ccGetUniqueId
#define ncclCommInitRankConfig ccCommInitRankConfig
#define ncclCommInitRank ccCommInitRank
#define ncclCommInitAll ccCommInitAll
#define ncclCommSplit ccCommSplit
#define ncclCommShrink ccCommShrink
#define NCCL_SHRINK_DEFAULT CC_SHRINK_DEFAULT
#define NCCL_SHRINK_ABORT CC_SHRINK_ABORT
#define ncclCommFinalize ccCommFinalize
#define ncclCommDestroy ccCommDestroy
#define ncclCommAbort ccCommAbort
#define ncclCommRevoke ccCommRevoke
#define NCCL_REVOKE_DEFAULT CC_REVOKE_DEFAULT
#define ncclCommGetAsyncError ccCommGetAsyncError
#define ncclGetErrorString ccGetErrorString
#define ncclGetLastError ccGetLastError
#define ncclCommCount ccCommCount
/* A host communicator's device is CC_DEVICE_HOST (-2). */
#define ncclCommCuDevice ccCommDevice
#define ncclCommUserRank ccCommUserRank
#define ncclRedOpCreatePreMulSum ccRedOpCreatePreMulSum
#define ncclRedOpDestroy ccRedOpDestroy
#define ncclMemAlloc ccMemAlloc
#define ncclMemFree ccMemFree
#define ncclCommRegister ccCommRegister
#define ncclCommDeregister ccCommDeregister
#define ncclReduce ccReduce
#define ncclBcast ccBcast
#define ncclBroadcast ccBroadcast
#define ncclAllReduce ccAllReduce
#define ncclReduceScatter ccReduceScatter
#define ncclAllGather ccAllGather
#define ncclAlltoAll ccAlltoAll
#define ncclGather ccGather
#define ncclScatter ccScatter
#define ncclSend ccSend
#define ncclRecv ccRecv
#define ncclGroupStart ccGroupStart
#define ncclGroupEnd ccGroupEnd
#define ncclGroupSimulateEnd ccGroupSimulateEnd
#define NCCL_SIM_INFO_INITIALIZER CC_SIM_INFO_INITIALIZER

#endif /* COLLCOMM_NCCL_COMPAT_H_ */
