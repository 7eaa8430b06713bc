// The device executor: what runs a GPU communicator's operations as kernels on the caller's
// stream. Core sees only this interface (no CUDA type, no CUDA header); src/device/cuda
// implements it, and a build without CUDA links cuda_absent.cc, whose makers refuse with a
// sentence.
//
// Host communicators still call the host executor directly (issue "one path": the host executor
// joins this interface next).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "common/status.h"
#include "device/fifo.h"
#include "device/op_arg.h"

namespace collcomm::detail {

// One ring channel as the executor sees it: the connections as made at init (their FIFOs in
// device-visible memory) and this rank's place on the ring.
struct ExecChannel {
  const SendConn* send;
  const RecvConn* recv;
  const int* ringRanks;  // nranks entries
  int ringPos;
};

// One planned collective, as every executor takes it.
struct ExecColl {
  CollKind kind;
  Algorithm algo;
  Protocol proto;
  ccDataType_t dtype;
  RedOpSpec op;  // ignored by Broadcast and AllGather
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // elements of dtype per rank, as the API counts them
  int root;
  int nChannels;  // the first nChannels channels of the communicator
};

// What a device executor is made from (at the end of a GPU communicator's init).
struct ExecSetup {
  int device;
  int rank;
  int nranks;
  int ranksOnDevice;  // ranks of this process on the same device (their kernels must run at once)
  int timeoutSeconds;
  std::vector<ExecChannel> channels;
};

class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;

  // Channels one launch may use: bounded so that the kernels of every rank sharing the device
  // fit on it at the same time (a rank's blocks wait for its peers' blocks).
  virtual int maxChannels() const = 0;
  // A sentence unless [p, p + bytes) is memory the device can read and write (device memory of
  // this or a peer-accessible device, or managed/mapped memory). Control tier.
  virtual Status checkBuffer(const void* p, size_t bytes, const char* opName, const char* which) const = 0;
  // Enqueues `coll` on `stream` (a cudaStream_t; NULL is the legacy default stream) and returns
  // without waiting. Operations of one communicator run in the order they were enqueued, whatever
  // streams they were given.
  virtual Status launch(const ExecColl& coll, ccStream_t stream) = 0;
  // kOk while no kernel of this communicator has failed; else the failure's code, with its
  // sentence (naming the peer rank and host) in *message. Any thread.
  virtual Status failure(const char* const* hostNames, std::string* message) const = 0;
  // Makes running and later kernels of this communicator stop (ccCommAbort). Any thread.
  virtual void abort() = 0;
  // Tells the peers' kernels this rank will not come (ccCommAbort, ccCommDestroy), so they fail
  // fast instead of at their deadline. Control tier.
  virtual void leave(int culprit, GoneReason reason) = 0;
};

// A usable device argument: a CUDA ordinal this process can use (`what` names the argument).
Status checkCudaDevice(int device, const char* what);

// Makes this thread's current CUDA device `device` until the guard ends (init and launches run on
// whatever thread the user or the worker gives them).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

Status makeCudaExecutor(const ExecSetup& setup, std::unique_ptr<DeviceExecutor>* out);

}  // namespace collcomm::detail
