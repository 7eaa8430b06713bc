/* The memory layout of NCCL's network plugin interface, versions 8 and 9 (the structs a NCCL net
 * plugin exports as `ncclNetPlugin_v8` and `ncclNetPlugin_v9`), declared here in collcomm's own
 * names so that collcomm can load the plugins clusters already have (net_plugin_nccl.cc maps them
 * onto the internal interface). Only the layout matters: member order, C types, the values below.
 * Plain C, so that the test plugin (tests/plugins/nccl_layout_net.c) is written against the same
 * declarations.
 *
 * Version 9 differs from 8 in: isend's size and irecv's sizes are size_t (test still reports ints);
 * the properties gain forceFlush (after regIsGlobal), a virtual-device description and the largest
 * point-to-point and collective transfer; makeVDevice is appended.
 *
 * What a plugin of either version promises, in short: connect/accept never block (null comm: call again, the
 * handle memory unchanged: plugins keep handshake state in it); the receiving side's irecvs match
 * the sending side's isends in posting order (the tags must agree; they select among the buffers
 * of a grouped receive); isend/irecv may return a null request when they cannot take one more;
 * sizes and tags are ints; buffers must be registered (regMr) with the comm they travel on. There
 * is no secret: a connection is whatever reaches the listener.
 */
#ifndef COLLCOMM_NCCL_NET_H_
#define COLLCOMM_NCCL_NET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CC_NCCL_NET_SYMBOL_V8 "ncclNetPlugin_v8"
#define CC_NCCL_NET_SYMBOL_V9 "ncclNetPlugin_v9"
#define CC_NCCL_NET_HANDLE_BYTES 128

/* Result codes: the same numbers as ccResult_t (0 success, 2 system, 3 internal, 6 remote, ...). */
typedef int ccNcclResult_t;

/* Memory types of regMr and the bits of ptrSupport. */
#define CC_NCCL_PTR_HOST 0x1
#define CC_NCCL_PTR_CUDA 0x2
#define CC_NCCL_PTR_DMABUF 0x4

/* Log levels the logger receives. */
#define CC_NCCL_LOG_WARN 2
#define CC_NCCL_LOG_INFO 3
#define CC_NCCL_LOG_ABORT 4
#define CC_NCCL_LOG_TRACE 5

/* level, subsystem bits, source file and line, printf format and its arguments. */
typedef void (*ccNcclLogger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

/* ---- version 8 */

/* Device offload of a connection (NCCL's "unpack" path for GPU receives); collcomm asks for none. */
typedef struct {
  int netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ccNcclNetDeviceHandle_v8_t;

typedef struct {
  char* name;           /* owned by the plugin */
  char* pciPath;        /* sysfs path of the NIC; may be null */
  uint64_t guid;
  int ptrSupport;       /* CC_NCCL_PTR_* bits */
  int regIsGlobal;      /* registrations are not tied to one comm */
  int speed;            /* Mbps */
  int port;
  float latency;        /* microseconds */
  int maxComms;
  int maxRecvs;         /* most buffers of a grouped irecv */
  int netDeviceType;    /* offload kind; 0: none (host) */
  int netDeviceVersion;
} ccNcclNetProperties_v8_t;

typedef struct {
  const char* name;
  ccNcclResult_t (*init)(ccNcclLogger_t logger);
  ccNcclResult_t (*devices)(int* ndev);
  ccNcclResult_t (*getProperties)(int dev, ccNcclNetProperties_v8_t* props);
  ccNcclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ccNcclResult_t (*connect)(int dev, void* handle, void** sendComm, ccNcclNetDeviceHandle_v8_t** sendDevComm);
  ccNcclResult_t (*accept)(void* listenComm, void** recvComm, ccNcclNetDeviceHandle_v8_t** recvDevComm);
  ccNcclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ccNcclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
  ccNcclResult_t (*deregMr)(void* comm, void* mhandle);
  ccNcclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ccNcclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                          void** request);
  ccNcclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ccNcclResult_t (*test)(void* request, int* done, int* sizes);
  ccNcclResult_t (*closeSend)(void* sendComm);
  ccNcclResult_t (*closeRecv)(void* recvComm);
  ccNcclResult_t (*closeListen)(void* listenComm);
  ccNcclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ccNcclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
} ccNcclNet_v8_t;

/* ---- version 9 */

#define CC_NCCL_NET_MAX_DEVS_PER_NIC_V9 4

/* A virtual device: the physical devices it merges. */
typedef struct {
  int ndevs;
  int devs[CC_NCCL_NET_MAX_DEVS_PER_NIC_V9];
} ccNcclNetVDeviceProps_v9_t;

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;       /* receives need iflush even where GPU memory is not involved */
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  int netDeviceType;
  int netDeviceVersion;
  ccNcclNetVDeviceProps_v9_t vProps;
  size_t maxP2pBytes;   /* largest point-to-point transfer */
  size_t maxCollBytes;  /* largest collective transfer */
} ccNcclNetProperties_v9_t;

typedef ccNcclNetDeviceHandle_v8_t ccNcclNetDeviceHandle_v9_t;

typedef struct {
  const char* name;
  ccNcclResult_t (*init)(ccNcclLogger_t logger);
  ccNcclResult_t (*devices)(int* ndev);
  ccNcclResult_t (*getProperties)(int dev, ccNcclNetProperties_v9_t* props);
  ccNcclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ccNcclResult_t (*connect)(int dev, void* handle, void** sendComm, ccNcclNetDeviceHandle_v9_t** sendDevComm);
  ccNcclResult_t (*accept)(void* listenComm, void** recvComm, ccNcclNetDeviceHandle_v9_t** recvDevComm);
  ccNcclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ccNcclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
  ccNcclResult_t (*deregMr)(void* comm, void* mhandle);
  ccNcclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  ccNcclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                          void** request);
  ccNcclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ccNcclResult_t (*test)(void* request, int* done, int* sizes);
  ccNcclResult_t (*closeSend)(void* sendComm);
  ccNcclResult_t (*closeRecv)(void* recvComm);
  ccNcclResult_t (*closeListen)(void* listenComm);
  ccNcclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptrMhandle);
  ccNcclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ccNcclResult_t (*makeVDevice)(int* d, ccNcclNetVDeviceProps_v9_t* props);
} ccNcclNet_v9_t;

#ifdef __cplusplus
}
#endif

#endif /* COLLCOMM_NCCL_NET_H_ */
