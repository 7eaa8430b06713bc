/* collcomm's network plugin interface, version 1: what a shared library provides so that the NET
 * transport (ranks on different hosts) moves its messages over the library's network instead of
 * the built-in TCP sockets or libfabric backends.
 *
 * A plugin is a shared library that exports one symbol, CC_NET_PLUGIN_SYMBOL ("ccNetPlugin_v1"),
 * a ccNet_v1_t whose `version` is CC_NET_PLUGIN_VERSION. collcomm loads it when COLLCOMM_NET_PLUGIN
 * names it (docs/net.md, "Plugins": the search, NCCL's plugins, what is not supported). The
 * built-in backends are built as plugins of this interface too (libcollcomm-net-socket.so,
 * libcollcomm-net-ofi.so), as working examples. Plain C: no C++ type crosses this boundary.
 *
 * The rules every plugin keeps (collcomm relies on each one):
 *
 *   Blocking. No function waits for a peer. listen, regMr and the close functions may allocate
 *     and make system calls. connect and accept return at once, with a null comm while the
 *     handshake is still going on; collcomm calls them again (with the same handle) until the comm
 *     is there or its deadline (COLLCOMM_TIMEOUT) passes. isend and irecv return ccSuccess with a
 *     null request when the comm cannot take one more now; collcomm tests earlier requests and
 *     posts again. test reports progress and never waits.
 *
 *   Threading. init, devices and getProperties may be called from any thread, more than once
 *     (init must be idempotent). One comm (listening, sending or receiving) is used by one thread
 *     at a time, but different comms may be used by different threads at the same time. A plugin
 *     may run threads of its own; they never call into collcomm (the logger excepted).
 *
 *   Ownership. The handle is collcomm's memory of CC_NET_HANDLE_BYTES bytes: listen fills it, it
 *     travels to the peer unchanged, and the connecting side passes the same handle memory to every
 *     connect call of one handshake (a plugin may keep its handshake state in it). A buffer given
 *     to isend or irecv belongs to the plugin until test reports its request done; test frees the
 *     request it reports done, and closing a comm frees the requests still on it. Strings in
 *     ccNetProperties_v1_t are copied by collcomm.
 *
 *   Ordering. The messages of one sending comm arrive in the order they were posted. A message is
 *     delivered into the earliest posted irecv of the receiving comm whose tag equals the message's
 *     tag; a message for which no such irecv is posted yet waits (and may hold the messages behind
 *     it) until one is.
 *
 *   Authentication. listen and connect receive the communicator's secret (ccNetSecret_v1_t, random
 *     per communicator). The connecting side presents it; accept drops (closes, and may log) any
 *     connection that presents another secret or is not a peer at all, and keeps accepting, so a
 *     stray or hostile connection never disturbs the job.
 *
 *   Errors. A function that fails returns a ccResult_t other than ccSuccess (ccSystemError for the
 *     network or the machine, ccRemoteError for the peer, ccInternalError for a broken rule,
 *     ccInvalidUsage for a setting) and keeps, for the calling thread, a sentence that lastError
 *     copies out: what failed and which remote address. collcomm shows it to the user through
 *     ccGetLastError. After a failure on a comm, only close is called on it.
 *
 *   Departures. A peer that closed its end is how ranks leave, not a network fault: a plugin
 *     reports it as an error of the comm but should log it quietly (CC_NET_LOG_INFO). A receiving
 *     side that leaves may first leave one word for its sender (farewell), which the sender reads
 *     once its comm has failed (peerFarewell). Both are optional.
 *
 * A null function pointer is allowed only where a member says "optional".
 */
#ifndef COLLCOMM_NET_H_
#define COLLCOMM_NET_H_

#include <stddef.h>
#include <stdint.h>

#include "collcomm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CC_NET_PLUGIN_VERSION 1
#define CC_NET_PLUGIN_SYMBOL "ccNetPlugin_v1"
#define CC_NET_HANDLE_BYTES 128

/* Memory types of regMr (and the bits of ccNetProperties_v1_t.memTypes). */
#define CC_NET_MEM_HOST 1
#define CC_NET_MEM_DEVICE 2

typedef enum { CC_NET_LOG_WARN = 1, CC_NET_LOG_INFO = 2, CC_NET_LOG_TRACE = 3 } ccNetLogLevel_t;

/* collcomm's log, for the plugin's messages: printed as COLLCOMM_DEBUG asks, under the NET
 * subsystem. Callable from any thread, at any time after init. `message` is one line. */
typedef void (*ccNetLogger_t)(ccNetLogLevel_t level, const char* message);

/* The communicator's secret: every connection of a communicator presents it (see Authentication). */
typedef struct {
  uint64_t words[2];
} ccNetSecret_v1_t;

typedef struct {
  char name[64];            /* interface or device name ("eth0", "mlx5_0") */
  char address[64];         /* its address, for logs */
  uint64_t guid;            /* unique per device */
  int speedMbps;            /* link speed; 0 when unknown */
  float latencyUs;          /* one-way latency estimate */
  int maxComms;             /* most connections the device holds at once */
  int maxRecvs;             /* most buffers one irecv may take; collcomm uses 1 */
  uint64_t maxMessageBytes; /* largest message */
  int memTypes;             /* CC_NET_MEM_* bits isend/irecv accept (HOST at least) */
} ccNetProperties_v1_t;

typedef struct {
  const char* name; /* for logs ("Socket", "OFI", "MyNet") */
  int version;      /* CC_NET_PLUGIN_VERSION: collcomm refuses any other */

  /* Finds the devices; idempotent. logger (never null) stays valid for the process. */
  ccResult_t (*init)(ccNetLogger_t logger);
  ccResult_t (*devices)(int* count);
  ccResult_t (*getProperties)(int dev, ccNetProperties_v1_t* props);

  /* Listens on `dev` for one connection presenting `secret`; fills `handle` for the peer. */
  ccResult_t (*listen)(int dev, const ccNetSecret_v1_t* secret, void* handle, void** listenComm);
  /* Connects to the listener `handle` describes; *sendComm stays null until the connection is
   * ready. A caller that gives up calls abandonConnect(handle), which frees the handshake state. */
  ccResult_t (*connect)(int dev, const ccNetSecret_v1_t* secret, void* handle, void** sendComm);
  void (*abandonConnect)(void* handle);
  /* Takes the next authenticated connection; *recvComm stays null until one is complete. */
  ccResult_t (*accept)(void* listenComm, void** recvComm);

  /* Registers `size` bytes at `data` (type CC_NET_MEM_*) with a send or receive comm. *mhandle may
   * be null where the plugin needs no registration; isend/irecv also accept a null mhandle for
   * small control messages (a plugin that cannot send unregistered memory registers it itself). */
  ccResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ccResult_t (*deregMr)(void* comm, void* mhandle);

  ccResult_t (*isend)(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request);
  /* n <= maxRecvs buffers; sizes are capacities (a larger message fails the request). */
  ccResult_t (*irecv)(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                      void** request);
  /* *done = 1 once complete (the request is then freed); sizes (may be null) get the bytes that
   * arrived per buffer of an irecv, or the bytes sent. */
  ccResult_t (*test)(void* request, int* done, size_t* sizes);

  /* Optional. Receiver, right before closeRecv: leaves `word` for the sender; best effort. */
  ccResult_t (*farewell)(void* recvComm, uint32_t word);
  /* Optional. Sender, after an op on the comm failed: 1 and the word its receiver left, else 0. */
  int (*peerFarewell)(void* sendComm, uint32_t* word);
  /* Optional. The largest size <= maxBytes, a multiple of align, that `dev` moves in whole
   * transmit units (no short packet after the full ones); 0 for no preference. */
  size_t (*wholeSegmentBytes)(int dev, size_t maxBytes, size_t align);

  ccResult_t (*closeSend)(void* sendComm);
  ccResult_t (*closeRecv)(void* recvComm);
  ccResult_t (*closeListen)(void* listenComm);

  /* Copies this thread's sentence about the plugin's last failure into buf (at most size bytes,
   * NUL-terminated); "" when there is none. */
  void (*lastError)(char* buf, size_t size);
} ccNet_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* COLLCOMM_NET_H_ */
