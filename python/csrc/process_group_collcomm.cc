// ProcessGroupCollcomm: torch.distributed's operations mapped onto collcomm's C API. This file
// makes, splits and ends the communicators, completes Work and runs batches (on the worker for CPU
// tensors, through gpu_path.h for CUDA ones); the operations themselves are in
// process_group_ops.cc.
#include "process_group_collcomm.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <utility>

#include "comm_setup.h"
#include "group_scope.h"

namespace collcomm_torch {
namespace {

// The store key under which rank 0 publishes the unique id (the store is already prefixed with
// the group's name and device by torch).
constexpr const char* kUniqueIdKey = "collcomm_unique_id";

}  // namespace

// ---- Work

CollcommWork::CollcommWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, bool inOpenBlock)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      inOpenBlock_(inOpenBlock) {}

bool CollcommWork::wait(std::chrono::milliseconds timeout) {
  if (inOpenBlock_.load()) return true;
  return c10d::Work::wait(timeout);
}

void CollcommWork::complete(const std::exception_ptr& error) {
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

// ---- setup and teardown

ProcessGroupCollcomm::ProcessGroupCollcomm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                           std::chrono::milliseconds timeout, std::string name)
    : c10d::Backend(rank, size), store_(store), timeout_(timeout), name_(std::move(name)) {
  const ccUniqueId id = exchangeUniqueId(*store, kUniqueIdKey, rank);
  ccConfig_t config = commConfig(CC_DEVICE_HOST, name_, timeout);
  ccResult_t res = ccCommInitRankConfig(&comm_, size, id, rank, &config);
  if (res != ccSuccess) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("collcomm: joining the communicator of group '", name_, "' as rank ", rank, " of ", size,
                             " failed: ", ccGetErrorString(res), ": ", ccGetLastError(nullptr)));
  }
  gpu_ = std::make_unique<GpuPath>(store, rank, size, timeout, name_);
  worker_ = std::make_unique<Worker>();
}

ProcessGroupCollcomm::ProcessGroupCollcomm(Adopt, ccComm_t comm, const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, std::chrono::milliseconds timeout, std::string name)
    : c10d::Backend(rank, size), comm_(comm), store_(store), timeout_(timeout), name_(std::move(name)) {
  gpu_ = std::make_unique<GpuPath>(store, rank, size, timeout, name_);
  worker_ = std::make_unique<Worker>();
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupCollcomm::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                              const std::vector<int>& ranks,
                                                              const c10::intrusive_ptr<Options>& opts) {
  TORCH_CHECK(!coalescing_, "collcomm: split_group inside a coalescing block; end the block first");
  // Some torch versions ask the backend of each device type it is registered for, and this one
  // serves both "cpu" and "cuda": their second call of one split_group (the same new store) gets
  // the first one's subgroup, once.
  if (lastSplit_ && lastSplit_->store == store.get() && lastSplit_->ranks == ranks) {
    auto again = std::move(lastSplit_->backend);
    lastSplit_.reset();
    return again;
  }
  lastSplit_.reset();
  TORCH_CHECK(!ranks.empty(), "collcomm: split_group needs at least one rank");
  for (size_t i = 0; i < ranks.size(); ++i) {
    TORCH_CHECK(ranks[i] >= 0 && ranks[i] < getSize(), "collcomm: split_group rank ", ranks[i],
                " is not a rank of group '", name_, "' (size ", getSize(), ")");
    TORCH_CHECK(i == 0 || ranks[i - 1] < ranks[i], "collcomm: split_group ranks must be sorted and distinct");
  }
  const auto self = std::find(ranks.begin(), ranks.end(), getRank());
  const bool member = self != ranks.end();
  // Subgroups made by one split are disjoint, so their lowest ranks tell them apart.
  const int color = member ? ranks.front() : CC_SPLIT_NOCOLOR;
  const int key = member ? static_cast<int>(self - ranks.begin()) : 0;
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  const std::string name = opts && !opts->group_name.empty() ? opts->group_name : name_ + ":split";
  ccComm_t child = nullptr;
  // The split is a collective of this group: it queues behind the group's earlier operations.
  std::vector<at::Tensor> none;
  auto work = enqueue(c10d::OpType::UNKNOWN, at::Device(at::kCPU), none,
                      Task{[this, color, key, &child, &name, timeout](const Target& on) {
                             ccConfig_t config = commConfig(CC_DEVICE_HOST, name, timeout);
                             check(on, ccCommSplit(on.comm, color, key, &child, &config), "split_group (ccCommSplit)");
                           },
                           {}});
  work->wait();  // rethrows the split's failure
  c10::intrusive_ptr<ProcessGroupCollcomm> sub;
  if (member) {
    TORCH_CHECK(child != nullptr, "collcomm: ccCommSplit gave no communicator to rank ", getRank(), " of group '",
                name_, "'");
    sub = c10::make_intrusive<ProcessGroupCollcomm>(Adopt{}, child, store, key, static_cast<int>(ranks.size()), timeout,
                                                    name);
  }
  gpu_->split(sub ? sub->gpu_.get() : nullptr, color, key);
  lastSplit_ = LastSplit{store.get(), ranks, sub};
  return sub;
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupCollcomm::shrink(const std::vector<int64_t>& excluded, int flags,
                                                               const c10::intrusive_ptr<Options>& opts) {
  TORCH_CHECK(!coalescing_, "collcomm: shrink_group inside a coalescing block; end the block first");
  TORCH_CHECK(flags == CC_SHRINK_DEFAULT || flags == CC_SHRINK_ABORT,
              "collcomm: shrink_group's flags must be SHRINK_DEFAULT (0) or SHRINK_ABORT (1), not ", flags);
  std::vector<int> ranks;
  int below = 0;  // excluded ranks below this one: its rank in the new group is that much lower
  for (int64_t r : excluded) {
    TORCH_CHECK(r >= 0 && r < getSize(), "collcomm: shrink_group excludes rank ", r, ", not a rank of group '", name_,
                "' (size ", getSize(), ")");
    ranks.push_back(static_cast<int>(r));
    below += r < getRank();
  }
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  const std::string name = opts && !opts->group_name.empty() ? opts->group_name : name_ + ":shrunk";
  ccComm_t child = nullptr;
  auto shrinkOn = [&](ccComm_t comm) {
    ccConfig_t config = commConfig(CC_DEVICE_HOST, name, timeout);
    return ccCommShrink(comm, ranks.data(), static_cast<int>(ranks.size()), &child, &config, flags);
  };
  if (flags == CC_SHRINK_ABORT) {
    // Here, not on the worker, which may be stuck in an operation with the dead rank: ccCommShrink
    // stops that operation, and the worker fails what is queued without calling in (aborted_).
    // shutdownMutex_, not commMutex_, keeps comm_ alive meanwhile, so that abort() from another
    // thread still gets through (its ccCommRevoke ends a shrink that hangs).
    std::lock_guard<std::mutex> lock(shutdownMutex_);
    TORCH_CHECK(!shutDown_ && comm_ != nullptr, "collcomm: the process group '", name_, "' was shut down");
    aborted_.store(true);
    if (gpu_) gpu_->abort();
    const ccResult_t res = shrinkOn(comm_);
    if (res != ccSuccess) {
      const char* detail = ccGetLastError(comm_);
      C10_THROW_ERROR(DistBackendError,
                      c10::str("collcomm shrink_group (ccCommShrink) failed on rank ", getRank(), " of group '", name_,
                               "': ", ccGetErrorString(res), ": ", detail != nullptr ? detail : "(no detail)"));
    }
  } else {
    std::vector<at::Tensor> none;
    auto work = enqueue(
        c10d::OpType::UNKNOWN, at::Device(at::kCPU), none,
        Task{[this, &shrinkOn](const Target& on) { check(on, shrinkOn(on.comm), "shrink_group (ccCommShrink)"); }, {}});
    work->wait();  // rethrows the shrink's failure
  }
  // Keys of the new group's own, in this group's store: every remaining rank names the same
  // excluded ranks and has made as many shrinks by them before.
  std::string prefix = "collcomm_shrink";
  for (int r : ranks) prefix += "_" + std::to_string(r);
  prefix += "#" + std::to_string(shrinks_[ranks]++) + "/";
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, store_);
  return c10::make_intrusive<ProcessGroupCollcomm>(Adopt{}, child, store, getRank() - below,
                                                   getSize() - static_cast<int>(ranks.size()), timeout, name);
}

ProcessGroupCollcomm::~ProcessGroupCollcomm() {
  try {
    shutdown();
  } catch (...) {
    // A destructor must not throw; shutdown already reported what it could.
  }
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupCollcomm::getBackendOptions() {
  auto options = c10::make_intrusive<Options>("collcomm", timeout_);
  options->group_name = name_;
  return options;
}

void ProcessGroupCollcomm::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(false,
              "collcomm fixes its timeout when the group is made (init_process_group's timeout); it cannot "
              "be changed afterwards");
  (void)timeout;
}

void ProcessGroupCollcomm::eagerConnectSingleDevice(at::Device device) { gpu_->connect(device); }

void ProcessGroupCollcomm::shutdown() {
  std::lock_guard<std::mutex> lock(shutdownMutex_);
  if (shutDown_) return;
  shutDown_ = true;
  if (worker_) worker_->stop();  // after abort(), the call in flight ends within milliseconds
  // The host communicator is freed even when the GPU side's teardown met a CUDA error, said after.
  std::exception_ptr gpuError;
  try {
    if (gpu_) gpu_->shutdown();
  } catch (...) {
    gpuError = std::current_exception();
  }
  std::lock_guard<std::mutex> commLock(commMutex_);
  if (comm_ != nullptr) {
    // A communicator that failed or was revoked cannot finalize in step with peers that are gone:
    // abort it (which also frees it).
    if (failed_.load() || aborted_.load()) {
      (void)ccCommAbort(comm_);
    } else {
      (void)ccCommDestroy(comm_);
    }
  }
  comm_ = nullptr;
  if (gpuError) std::rethrow_exception(gpuError);
}

void ProcessGroupCollcomm::abort() {
  if (aborted_.exchange(true)) return;
  // ccCommRevoke interrupts the call in flight on the worker, which then fails its Work, and
  // keeps the handle valid, so a call the worker starts in the same instant is refused rather
  // than made on freed memory; the worker fails everything still queued without calling in.
  // shutdown() frees the communicator once the worker has stopped.
  {
    std::lock_guard<std::mutex> lock(commMutex_);
    if (comm_ != nullptr) (void)ccCommRevoke(comm_, CC_REVOKE_DEFAULT);
  }
  if (gpu_) gpu_->abort();
}

void ProcessGroupCollcomm::check(const Target& on, ccResult_t result, const char* what) {
  if (result == ccSuccess) return;
  // The host communicator's own failure decides how it is closed (a GPU one's: gpu_path.h).
  if (on.comm == comm_) failed_.store(true);
  // An aborted group's communicator is revoked, not freed, until shutdown: its sentence is readable.
  if (aborted_.load())
    C10_THROW_ERROR(DistBackendError, c10::str("collcomm ", what, " on rank ", getRank(), " of group '", name_,
                                               "': the process group was aborted (", ccGetErrorString(result), ")"));
  const char* detail = ccGetLastError(on.comm);
  C10_THROW_ERROR(DistBackendError,
                  c10::str("collcomm ", what, " failed on rank ", getRank(), " of group '", name_,
                           "': ", ccGetErrorString(result), ": ", detail != nullptr ? detail : "(no detail)"));
}

// ---- the worker side

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::enqueue(c10d::OpType type, at::Device device,
                                                             std::vector<at::Tensor> outputs, Task task) {
  TORCH_CHECK(!shutDown_, "collcomm: the process group '", name_, "' was shut down");
  lastSplit_.reset();  // split()'s second call comes right after the first, or not at all
  if (coalescing_)
    TORCH_CHECK(!coalescedDevice_ || *coalescedDevice_ == device,
                "collcomm: a coalesced batch runs on one device; it began on ", *coalescedDevice_,
                " and this operation is on ", device);
  c10::intrusive_ptr<c10d::Work> work =
      device.is_cpu()
          ? c10::intrusive_ptr<c10d::Work>(c10::make_intrusive<CollcommWork>(getRank(), type, outputs, coalescing_))
          : gpu_->newWork(device, type, outputs);
  sequence_++;
  if (coalescing_) {
    coalescedDevice_ = device;
    coalescedTasks_.push_back(std::move(task));
    coalescedWorks_.push_back(work);
    return work;
  }
  std::vector<Task> tasks;
  tasks.push_back(std::move(task));
  if (!device.is_cpu()) {
    gpu_->launch(device, std::move(tasks), false, runner(), {work});
    return work;
  }
  auto cpuWork = c10::static_intrusive_pointer_cast<CollcommWork>(work);
  worker_->post([this, cpuWork, tasks = std::move(tasks)]() mutable {
    std::exception_ptr error;
    try {
      runTasks(tasks, false, Target{comm_, nullptr});
    } catch (...) {
      error = std::current_exception();
    }
    cpuWork->complete(error);
  });
  return work;
}

TaskRunner ProcessGroupCollcomm::runner() {
  return [this](std::vector<Task>& tasks, bool grouped, const Target& on) { runTasks(tasks, grouped, on); };
}

void ProcessGroupCollcomm::runTasks(std::vector<Task>& tasks, bool grouped, const Target& on) {
  TORCH_CHECK(!aborted_.load(), "collcomm: the process group '", name_, "' was aborted");
  if (grouped) {
    GroupScope group;
    for (auto& t : tasks) t.issue(on);
    check(on, group.end(), "coalesced batch (ccGroupEnd)");
  } else {
    for (auto& t : tasks) t.issue(on);
  }
  for (auto& t : tasks) {
    if (t.finish) t.finish();
  }
}

void ProcessGroupCollcomm::startCoalescing() {
  TORCH_CHECK(!coalescing_, "collcomm: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::endCoalescing() {
  TORCH_CHECK(coalescing_, "collcomm: endCoalescing without startCoalescing");
  coalescing_ = false;
  const at::Device device = coalescedDevice_.value_or(at::Device(at::kCPU));
  coalescedDevice_.reset();
  auto tasks = std::move(coalescedTasks_);
  auto works = std::move(coalescedWorks_);
  coalescedTasks_.clear();
  coalescedWorks_.clear();
  if (!device.is_cpu()) {
    auto batch = gpu_->newWork(device, c10d::OpType::COALESCED, {});
    works.push_back(batch);
    gpu_->launch(device, std::move(tasks), true, runner(), works);
    return batch;
  }
  auto batch = c10::make_intrusive<CollcommWork>(getRank(), c10d::OpType::COALESCED, std::vector<at::Tensor>{});
  for (auto& w : works)
    if (auto* cpuWork = dynamic_cast<CollcommWork*>(w.get())) cpuWork->blockEnded();
  if (shutDown_) {
    // The block's operations will never run: their Works fail rather than report success.
    std::exception_ptr error;
    try {
      TORCH_CHECK(false, "collcomm: the process group '", name_, "' was shut down before the coalesced block ended");
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& w : works)
      if (auto* cpuWork = dynamic_cast<CollcommWork*>(w.get())) cpuWork->complete(error);
    batch->complete(error);
    std::rethrow_exception(error);
  }
  worker_->post([this, batch, tasks = std::move(tasks), works = std::move(works)]() mutable {
    std::exception_ptr error;
    try {
      runTasks(tasks, true, Target{comm_, nullptr});
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& w : works) c10::static_intrusive_pointer_cast<CollcommWork>(w)->complete(error);
    batch->complete(error);
  });
  return batch;
}

}  // namespace collcomm_torch
