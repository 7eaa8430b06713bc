// ProcessGroupCollcomm: a c10d::Backend that runs torch.distributed's collectives through collcomm.
// CPU tensors go through one host communicator: every call returns at once with a CollcommWork; the
// operation runs on this group's worker thread, in the order the calls were made (what torch
// expects of one process group), and completes the Work and its future. CUDA tensors go through a
// GPU communicator per device, enqueued on a stream of the group's from the caller's thread
// (gpu_path.h).
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "collcomm.h"
#include "gpu_path.h"
#include "task.h"
#include "worker.h"

namespace collcomm_torch {

// The handle torch gives back for one operation (or one coalesced batch): completed by the worker,
// with the tensors the operation wrote as its future's value, or the exception that failed it.
class CollcommWork : public c10d::Work {
 public:
  // inOpenBlock: made inside a coalescing block, whose operations run when it ends.
  CollcommWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, bool inOpenBlock = false);
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  // Inside the open block it returns at once, as ProcessGroupNCCL's does there (torch's
  // synchronous calls wait on each operation's Work; the block's own Work is the one to wait for).
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  // The block ended: wait() waits for the operation from now on.
  void blockEnded() { inOpenBlock_.store(false); }
  // Called once, on the worker: marks the Work done (waking wait()) and settles the future.
  void complete(const std::exception_ptr& error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> inOpenBlock_;
};

class ProcessGroupCollcomm : public c10d::Backend {
 public:
  // Collective over the group: rank 0 makes the unique id and publishes it in `store`, every rank
  // joins with `timeout` as collcomm's deadline for every wait.
  ProcessGroupCollcomm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, std::string name);
  // Takes over `comm`, a communicator split from another group's (see split()); `store` is the new
  // group's, for the GPU communicators it makes later.
  struct Adopt {};
  ProcessGroupCollcomm(Adopt, ccComm_t comm, const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, std::string name);
  ~ProcessGroupCollcomm() override;

  const std::string getBackendName() const override { return "collcomm"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }
  void setTimeout(std::chrono::milliseconds timeout) override;
  // init_process_group(device_id=cuda:N): the GPU communicator of that device is made now, not at
  // its first operation.
  void eagerConnectSingleDevice(at::Device device) override;

  // ProcessGroup::split_group: every rank of this group calls, each with the sorted ranks (of this
  // group) of the subgroup it joins, or a list without itself. One ccCommSplit over this group
  // makes every subgroup at once (color: a subgroup's lowest rank; key: the place in `ranks`). It
  // runs on the worker, after what is queued, and returns the subgroup's backend, or null on a
  // rank outside `ranks`. The GPU communicators the group has made are split the same way.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;

  // torch's shrink_group: the ranks not in `excluded` (ranks of this group) make a group without
  // them, by ccCommShrink of the host communicator; the excluded ones take no part (they may be
  // dead). flags: SHRINK_DEFAULT (queued behind this group's earlier operations) or SHRINK_ABORT
  // (stops what this group runs first, as abort() does; this group is then good only for
  // shutdown). The new group makes its own GPU communicators at its first CUDA operation.
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t>& excluded, int flags,
                                           const c10::intrusive_ptr<Options>& opts) override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // Waits for queued work, then destroys the communicator in step with the peers.
  void shutdown() override;
  // Stops whatever is in flight (ccCommRevoke, GPU communicators too) and fails everything queued;
  // returns at once. The communicators are freed by shutdown (or the destructor), after the worker
  // has stopped.
  void abort() override;

 private:
  // Queues `task`, an operation on tensors of `device` (or adds it to the open coalesced batch):
  // on the worker for CPU tensors, on the device's stream for CUDA ones. The Work completes when it
  // has run.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, at::Device device, std::vector<at::Tensor> outputs,
                                         Task task);
  // Runs tasks against `on`: one alone, or several between ccGroupStart and ccGroupEnd.
  void runTasks(std::vector<Task>& tasks, bool grouped, const Target& on);
  // runTasks, for GpuPath::launch.
  TaskRunner runner();
  // Throws a DistBackendError with collcomm's sentence (on.comm's) when `result` is not ccSuccess.
  void check(const Target& on, ccResult_t result, const char* what);

  Task allreduceTask(const at::Tensor& tensor, const c10d::ReduceOp& op);
  Task allgatherBaseTask(const at::Tensor& output, const at::Tensor& input);
  Task reduceScatterBaseTask(const at::Tensor& output, const at::Tensor& input, const c10d::ReduceOp& op);

  ccComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;  // the group's; a shrunk group's GPU communicators take keys in it
  std::chrono::milliseconds timeout_;
  std::string name_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> sequence_{0};
  std::mutex shutdownMutex_;
  // comm_'s lifetime against abort() from another thread (shutdown frees it while abort may revoke).
  std::mutex commMutex_;
  bool shutDown_ = false;
  // Ops issued between startCoalescing and endCoalescing: run as one ccGroupStart/End batch, on
  // the device of the first (every op of a batch must be on it).
  bool coalescing_ = false;
  std::optional<at::Device> coalescedDevice_;
  std::vector<Task> coalescedTasks_;
  std::vector<c10::intrusive_ptr<c10d::Work>> coalescedWorks_;
  // The subgroup the last split made, for torch's second call of the same split (split()).
  struct LastSplit {
    const c10d::Store* store;  // the new group's, made once per split_group
    std::vector<int> ranks;
    c10::intrusive_ptr<c10d::Backend> backend;
  };
  std::optional<LastSplit> lastSplit_;
  // How many shrinks by each set of excluded ranks this group made (their new groups' store keys).
  std::map<std::vector<int>, int> shrinks_;
  std::unique_ptr<GpuPath> gpu_;
  std::unique_ptr<Worker> worker_;  // last: its thread stops before the members it uses go
};

}  // namespace collcomm_torch
