// ProcessGroupCollcomm: a c10d::Backend that runs torch.distributed's collectives on CPU tensors
// through one collcomm host communicator. Every call returns at once with a CollcommWork; the
// operation runs on this group's worker thread, in the order the calls were made (what torch
// expects of one process group), and completes the Work and its future.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "collcomm.h"
#include "worker.h"

namespace collcomm_torch {

// The handle torch gives back for one operation (or one coalesced batch): completed by the worker,
// with the tensors the operation wrote as its future's value, or the exception that failed it.
class CollcommWork : public c10d::Work {
 public:
  CollcommWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  // Called once, on the worker: marks the Work done (waking wait()) and settles the future.
  void complete(const std::exception_ptr& error);

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// One operation as the worker runs it: `issue` makes the collcomm calls (it may run between
// ccGroupStart and ccGroupEnd when coalesced), then `finish` copies results into tensors that
// were not contiguous. Both run on the worker; either may throw.
struct Task {
  std::function<void()> issue;
  std::function<void()> finish;
};

class ProcessGroupCollcomm : public c10d::Backend {
 public:
  // Collective over the group: rank 0 makes the unique id and publishes it in `store`, every rank
  // joins with `timeout` as collcomm's deadline for every wait.
  ProcessGroupCollcomm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, std::string name);
  // Takes over `comm`, a communicator split from another group's (see split()).
  struct Adopt {};
  ProcessGroupCollcomm(Adopt, ccComm_t comm, int rank, int size, std::chrono::milliseconds timeout, std::string name);
  ~ProcessGroupCollcomm() override;

  const std::string getBackendName() const override { return "collcomm"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }
  void setTimeout(std::chrono::milliseconds timeout) override;

  // ProcessGroup::split_group: every rank of this group calls, each with the sorted ranks (of this
  // group) of the subgroup it joins, or a list without itself. One ccCommSplit over this group
  // makes every subgroup at once (color: a subgroup's lowest rank; key: the place in `ranks`). It
  // runs on the worker, after what is queued, and returns the subgroup's backend, or null on a
  // rank outside `ranks`.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
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
  // Stops whatever is in flight (ccCommRevoke) and fails everything queued; returns at once.
  // The communicator is freed by shutdown (or the destructor), after the worker has stopped.
  void abort() override;

 private:
  // Queues `task` (or adds it to the open coalesced batch); the Work completes when it has run.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs, Task task);
  // Runs tasks on the worker: one alone, or several between ccGroupStart and ccGroupEnd.
  void runTasks(std::vector<Task>& tasks, bool grouped);
  // Throws a DistBackendError with collcomm's sentence when `result` is not ccSuccess.
  void check(ccResult_t result, const char* what);

  Task allreduceTask(const at::Tensor& tensor, const c10d::ReduceOp& op);
  Task allgatherBaseTask(const at::Tensor& output, const at::Tensor& input);
  Task reduceScatterBaseTask(const at::Tensor& output, const at::Tensor& input, const c10d::ReduceOp& op);

  ccComm_t comm_ = nullptr;
  std::chrono::milliseconds timeout_;
  std::string name_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> sequence_{0};
  std::mutex shutdownMutex_;
  // comm_'s lifetime against abort() from another thread (shutdown frees it while abort may revoke).
  std::mutex commMutex_;
  bool shutDown_ = false;
  // Ops issued between startCoalescing and endCoalescing: run as one ccGroupStart/End batch.
  bool coalescing_ = false;
  std::vector<Task> coalescedTasks_;
  std::vector<c10::intrusive_ptr<CollcommWork>> coalescedWorks_;
  std::unique_ptr<Worker> worker_;  // last: its thread stops before the members it uses go
};

}  // namespace collcomm_torch
