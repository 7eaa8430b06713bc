// The internal net interface, version 1: what a network backend (the built-in sockets, next
// InfiniBand verbs, later out-of-tree plugins through include/collcomm_net.h) provides to the NET
// transport and its proxy thread. In the spirit of NCCL's ncclNet_v11_t: devices with properties,
// a listen/connect/accept handshake that never blocks, tagged isend/irecv/test, registration.
//
// Contract every backend keeps:
//   Blocking: no op blocks. listen/regMr/close* may allocate and make syscalls (setup tier);
//     connect and accept return at once with a null comm while the handshake is still under way
//     (call again); isend/irecv return a null request when the comm cannot take one more (call
//     again after testing earlier ones); test reports progress and never waits.
//   Threading: init and devices/getProperties may be called from any thread, any number of times.
//     One comm (listen, send or recv) is used by one thread at a time, but different comms may be
//     used by different threads at once. A backend may run helper threads of its own; they never
//     call back into collcomm.
//   Ownership: the handle is caller memory (kNetHandleBytes) that travels to the peer unchanged;
//     the connecting side passes the same handle to every connect call of one handshake. A buffer
//     given to isend/irecv belongs to the backend until test says done. Requests are freed by the
//     test that reports them done (or by closing their comm).
//   Ordering: the messages of one send comm arrive in the order posted. A receive matches the
//     earliest posted irecv whose tag equals the message's; a message with no matching irecv waits
//     (and holds the messages behind it) until one is posted.
//   Authentication: every connection presents the secret given to connect; accept drops (closes,
//     logs) any connection that presents another secret or anything else, and goes on accepting.
//   Errors: an op that fails returns a Status whose sentence (CC_ERROR) names the remote address
//     and what happened; the comm is unusable afterwards except for close. A peer that closed its
//     end is how peers leave, not a fault of the network: it is logged at INFO only (the caller,
//     which knows the peer's rank, reports it where it matters).
//   Departures: a receiving side that leaves may first leave one word for its sender (farewell);
//     the sender reads it once its comm has failed (peerFarewell). Both optional (null).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace collcomm::detail {

inline constexpr int kNetInterfaceVersion = 1;
inline constexpr size_t kNetHandleBytes = 128;
inline constexpr int kNetMaxRequests = 32;  // in flight per comm, at least

struct NetSecret {
  uint64_t words[2];
};

enum class NetMemType : int { kHost = 1, kDevice = 2 };

struct NetProperties {
  char name[64];           // interface or device name ("eth0", "mlx5_0")
  char address[64];        // its address, for logs
  uint64_t guid;
  int speedMbps;           // link speed; 0 when unknown (loopback, virtual links)
  float latencyUs;         // one-way latency estimate
  int maxComms;            // most connections the device holds at once
  int maxRecvs;            // most buffers one irecv may take (grouped receives)
  uint64_t maxMessageBytes;
  bool supportsDeviceMemory;  // isend/irecv on GPU memory (GPUDirect RDMA)
};

struct NetOpsV1 {
  const char* name;
  int version;  // kNetInterfaceVersion
  // Idempotent; finds the devices (a backend may find them again when its settings changed).
  Status (*init)();
  Status (*devices)(int* count);
  Status (*getProperties)(int dev, NetProperties* props);
  // Starts listening on `dev` for one connection presenting `secret`; fills `handle` for the peer.
  Status (*listen)(int dev, const NetSecret& secret, void* handle, void** listenComm);
  // Connects to the listener `handle` describes. *sendComm stays null until the connection is
  // ready; call again with the same handle. A caller that gives up calls abandonConnect(handle).
  Status (*connect)(int dev, const NetSecret& secret, void* handle, void** sendComm);
  void (*abandonConnect)(void* handle);
  // Takes the next authenticated connection; *recvComm stays null until one is complete.
  Status (*accept)(void* listenComm, void** recvComm);
  Status (*regMr)(void* comm, void* data, size_t size, NetMemType type, void** mhandle);
  Status (*deregMr)(void* comm, void* mhandle);
  Status (*isend)(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request);
  // n <= maxRecvs buffers; sizes are capacities (a larger message is an error).
  Status (*irecv)(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                  void** request);
  // *done = true once complete; then sizes[i] (may be null) get the bytes that arrived per buffer.
  Status (*test)(void* request, bool* done, size_t* sizes);
  // Receiver, right before closeRecv: leaves `word` (opaque to the backend) for the sender. Best
  // effort; never blocks. May be null.
  Status (*farewell)(void* recvComm, uint32_t word);
  // Sender, after an op on the comm failed: true with the word its receiver left before closing,
  // false when it left none (it died, or the link broke). May be null.
  bool (*peerFarewell)(void* sendComm, uint32_t* word);
  // The largest message size <= maxBytes, a multiple of `align`, that the backend moves over
  // `dev` in whole transmit units: no short packet after the full ones (TCP cuts a stream into
  // segments of its MSS; a message that leaves a few bytes over costs a short segment that takes
  // as long through the stack as a full one). 0: no such size, or no preference. May be null.
  size_t (*wholeSegmentBytes)(int dev, size_t maxBytes, size_t align);
  Status (*closeSend)(void* sendComm);
  Status (*closeRecv)(void* recvComm);
  Status (*closeListen)(void* listenComm);
};

// The built-in socket backend (net_socket*.cc; net_socket_internal.h maps its files).
const NetOpsV1& socketNet();
// The libfabric backend (net_ofi*.cc; net_ofi_internal.h maps its files). Its init fails, with a
// sentence, where libfabric or a usable provider is missing.
const NetOpsV1& ofiNet();
// The backend COLLCOMM_NET selects (net_select.cc): sockets unless it says ofi.
const NetOpsV1& selectedNet();

// How many helper threads and sockets per thread a socket connection uses: COLLCOMM_SOCKET_NTHREADS
// when set (>= 0; 0: none, everything on the control socket) and COLLCOMM_NSOCKS_PERTHREAD when
// set (> 0), else chosen by link speed (speedMbps, 0 unknown) and the CPUs the process may run on
// (cpus, 0 unknown): no helper threads below 4 CPUs.
void socketThreadsAndSockets(int speedMbps, int cpus, int* nThreads, int* nSocksPerThread);
// The CPUs this process may run on (its affinity mask); 0 when unknown.
int processCpus();

}  // namespace collcomm::detail
