// Transports: how the FIFO of one connection (see device/fifo.h) comes to be memory both ranks
// can reach. The receiver creates the FIFO, describes it in a ConnDesc that travels to the sender
// over the bootstrap, and the sender attaches to it.
//
// A transport is a named ops table. Every op runs on the communicator's control thread during
// connection setup (setup tier: may allocate, make syscalls, block until the deadline).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "common/deadline.h"
#include "common/status.h"
#include "device/fifo.h"

namespace collcomm::detail {

// What every rank tells every other at init (all-gathered through the bootstrap).
struct PeerInfo {
  int rank;
  int pid;
  uint64_t hostHash;      // same value <=> same host (hostname + boot id)
  uint64_t processToken;  // same value <=> same process
  int device;
  // The device's PCI bus id (topo/system.h's encoding; -1 for host ranks, or where CUDA cannot
  // tell): names one GPU alike in every process, whatever CUDA_VISIBLE_DEVICES numbers it.
  int64_t deviceBusId;
  // 1 when CUDA's MPS shares the device among processes (their kernels then run at the same time;
  // core/gpu_job.h), else 0.
  int32_t deviceMps;
  char host[64];
  uint64_t cpuMask[16];   // the CPUs the rank's thread may run on at init (first 1024)
  // Same value <=> same kernel (its boot id), whatever COLLCOMM_HOSTID says: ranks that count as
  // separate hosts (network namespaces, containers) may still share CPUs (hostOversubscribed).
  uint64_t machineHash;
  // Different for every communicator this process makes (its rank's part of it): rank 0's names
  // the communicator among the process's others (the CUDA executor's launch groups).
  uint64_t commNonce;
  // The PID namespace the rank's process lives in (/proc/self/ns/pid's device and inode; 0 where
  // unreadable): containers on one machine share its kernel but number their processes apart.
  uint64_t pidNamespace;
};

// Whether `peer`'s pid names its process in this rank's /proc: the same kernel and PID namespace
// (a pid from another container's namespace would name some other process here, or none). Where
// neither could read its namespace, the kernel alone decides, as before namespaces were compared.
inline bool samePidSpace(const PeerInfo& self, const PeerInfo& peer) {
  return self.machineHash == peer.machineHash && self.pidNamespace == peer.pidNamespace;
}

// Opaque description of a FIFO, made by the receiving side's transport.
struct ConnDesc {
  uint32_t transport;  // index in transportTable()
  uint32_t simpleStepMax;  // the payload a Simple step of this connection carries at most
  uint64_t bytes;      // FIFO block size
  uint64_t simpleStepBytes;  // the receiver's layout, which the sender adopts
  uint64_t llStepLines;
  char data[224];
};

// What setting up one connection runs under, beyond the two ranks' PeerInfo.
struct ConnSetup {
  uint64_t secret[2];  // the job's secret: NET connections present it to each other
  Deadline deadline;
  // The communicator's count of operations running (ProxyActivity); null: always count as busy.
  // NET reads its idle connections' sockets only now and then (net_transport.cc).
  const std::atomic<int>* opsRunning = nullptr;
};

// Keeps one side's mapping of a FIFO alive; destroying it releases that side's share.
class FifoMemory {
 public:
  virtual ~FifoMemory() = default;
  virtual void* base() = 0;
};

struct TransportOps {
  const char* name;
  // Whether this transport can join `self` and `peer` (given the user's COLLCOMM_*_DISABLE). Asked
  // by the receiving side (self) alone: the sender takes the transport its description names.
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
  // Receiver: creates a zeroed FIFO block of layout.totalBytes() and describes it.
  Status (*createFifo)(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                       std::unique_ptr<FifoMemory>* mem, ConnDesc* desc);
  // Sender: maps the block `desc` describes (NET: makes its own and connects to the receiver).
  Status (*attachFifo)(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                       std::unique_ptr<FifoMemory>* mem);
  // Receiver, once the sender has attached: drop names others could still open; NET: accept the
  // sender's connection (may be null).
  Status (*senderAttached)(FifoMemory& mem, const PeerInfo& peer, const ConnSetup& setup);
  // Receiver: the payload a Simple step of a FIFO with `layout` should carry at most, a multiple
  // of 64 bytes and at most its slot (NET: what the network moves without a short packet at the
  // end, net.h wholeSegmentBytes). Null: the whole slot.
  size_t (*stepMaxBytes)(const FifoLayout& layout);
  // The proxy thread moves what the sender publishes (proxy/proxy.h); the sender's executor then
  // hands large published steps over at once (SendConn::proxied).
  bool proxied = false;
  // Its FIFOs are device-visible (a GPU communicator's kernels use them); such a transport joins
  // only GPU ranks, the others only host ranks.
  bool deviceFifo = false;
};

extern const TransportOps kP2pTransport;
extern const TransportOps kShmTransport;
extern const TransportOps kNetTransport;  // transport/net/net_transport.cc
// The name both NET tables (kNetTransport, kCudaNetTransport) carry: core tells a NET connection by
// it, as the proxy thread must be awake while one runs an operation.
extern const char kNetTransportName[];
// GPU ranks of one process, of several processes of one host, and of different hosts
// (transport/cuda/); only in builds with CUDA (CC_HAVE_CUDA).
extern const TransportOps kCudaP2pTransport;
extern const TransportOps kCudaIpcTransport;
extern const TransportOps kCudaNetTransport;

// Transports in order of preference.
const TransportOps* const* transportTable(int* count);

}  // namespace collcomm::detail
