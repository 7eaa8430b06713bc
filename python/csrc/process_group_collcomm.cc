// ProcessGroupCollcomm: torch.distributed's operations mapped onto collcomm's C API.
#include "process_group_collcomm.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <utility>

namespace collcomm_torch {
namespace {

// A host communicator's settings for a group named `name`: torch's timeout in whole seconds,
// rounded up, is collcomm's deadline for every wait. `name` must outlive the call it is used in.
ccConfig_t hostConfig(const std::string& name, std::chrono::milliseconds timeout) {
  ccConfig_t config = CC_CONFIG_INITIALIZER;
  config.device = CC_DEVICE_HOST;
  config.commName = name.c_str();
  config.timeout = static_cast<int>(std::max<int64_t>(1, (timeout.count() + 999) / 1000));
  return config;
}

// The store key under which rank 0 publishes the unique id (the store is already prefixed with
// the group's name and device by torch).
constexpr const char* kUniqueIdKey = "collcomm_unique_id";

// collcomm's element type for a reduction on `t`, or nullopt where collcomm has none.
std::optional<ccDataType_t> reductionType(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return ccFloat32;
    case at::kDouble:
      return ccFloat64;
    case at::kHalf:
      return ccFloat16;
    case at::kBFloat16:
      return ccBfloat16;
    case at::kFloat8_e4m3fn:
      return ccFloat8e4m3;
    case at::kFloat8_e5m2:
      return ccFloat8e5m2;
    case at::kChar:
      return ccInt8;
    case at::kByte:
      return ccUint8;
    case at::kBool:
      return ccUint8;
    case at::kInt:
      return ccInt32;
    case at::kUInt32:
      return ccUint32;
    case at::kLong:
      return ccInt64;
    case at::kUInt64:
      return ccUint64;
    default:
      return std::nullopt;
  }
}

// A reduction as collcomm runs it: a built-in op, or a PreMulSum made for this call (destroyed
// with the holder, after the batch it ran in has finished).
struct Reduction {
  ccDataType_t type = ccFloat32;
  ccRedOp_t op = ccSum;
  ccComm_t comm = nullptr;
  bool owned = false;
  Reduction() = default;
  Reduction(const Reduction&) = delete;
  Reduction& operator=(const Reduction&) = delete;
  ~Reduction() {
    if (owned) (void)ccRedOpDestroy(op, comm);
  }
};

// Decides collcomm's type and op for reducing `t` with `op`; throws (RuntimeError) for what
// collcomm cannot reduce. Runs on the caller's thread, so bad arguments fail at the call.
void checkReduction(const at::Tensor& t, const c10d::ReduceOp& op) {
  TORCH_CHECK(reductionType(t.scalar_type()).has_value(), "collcomm cannot reduce tensors of type ", t.scalar_type(),
              " (it reduces float64/32/16, bfloat16, float8_e4m3fn, float8_e5m2, int8, uint8, int32, uint32, int64, "
              "uint64 and bool)");
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::PRODUCT:
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
      return;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(t.scalar_type() != at::kBool, "collcomm: ReduceOp.AVG is not defined for bool tensors");
      return;
    case c10d::ReduceOp::PREMUL_SUM:
      TORCH_CHECK(t.scalar_type() != at::kBool, "collcomm: PREMUL_SUM is not defined for bool tensors");
      TORCH_CHECK(op.supplement_.defined(), "collcomm: PREMUL_SUM without its factor");
      return;
    default:
      TORCH_CHECK(false,
                  "collcomm has no bitwise reductions (BAND, BOR, BXOR); use SUM, PRODUCT, MIN, MAX, AVG or "
                  "PREMUL_SUM");
  }
}

std::shared_ptr<Reduction> makeReduction(ccComm_t comm, const at::Tensor& t, const c10d::ReduceOp& op) {
  auto r = std::make_shared<Reduction>();
  r->type = *reductionType(t.scalar_type());
  const bool isBool = t.scalar_type() == at::kBool;
  switch (op.op_) {
    // bool sums and products are logical OR and AND, as torch defines them.
    case c10d::ReduceOp::SUM:
      r->op = isBool ? ccMax : ccSum;
      break;
    case c10d::ReduceOp::PRODUCT:
      r->op = isBool ? ccMin : ccProd;
      break;
    case c10d::ReduceOp::MIN:
      r->op = ccMin;
      break;
    case c10d::ReduceOp::MAX:
      r->op = ccMax;
      break;
    case c10d::ReduceOp::AVG:
      r->op = ccAvg;
      break;
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr, "collcomm: PREMUL_SUM with an unknown factor kind");
      // The factor in the tensor's own type, read by collcomm when the op is made.
      at::Tensor factor = supplement->tensor_factor.defined()
                              ? supplement->tensor_factor.to(at::kCPU, t.scalar_type()).reshape({1}).contiguous()
                              : at::full({1}, supplement->double_factor, t.options().dtype(t.scalar_type()));
      ccRedOp_t made;
      ccResult_t res = ccRedOpCreatePreMulSum(&made, factor.data_ptr(), r->type, ccScalarHostImmediate, comm);
      TORCH_CHECK(res == ccSuccess, "collcomm: ccRedOpCreatePreMulSum failed: ", ccGetLastError(comm));
      r->op = made;
      r->comm = comm;
      r->owned = true;
      break;
    }
    default:
      TORCH_CHECK(false, "collcomm: unsupported reduction");
  }
  return r;
}

void checkCpu(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "collcomm ", what,
              ": only CPU tensors are supported (CUDA tensors come with the GPU communicator); got a tensor on ",
              t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "collcomm ", what, ": only dense (strided) tensors are supported");
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "collcomm ", what, ": expects one tensor per call, got ", tensors.size());
  checkCpu(tensors[0], what);
}

void checkRoot(int64_t root, int size, const char* what) {
  TORCH_CHECK(root >= 0 && root < size, "collcomm ", what, ": root ", root, " is not a rank of this group of ", size);
}

size_t bytesOf(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// A contiguous tensor with t's values: t itself when it is contiguous, else a copy (made on the
// worker, so it sees what earlier operations wrote).
at::Tensor dense(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

// A contiguous tensor to write t's result into: t itself when it is contiguous, else a new one
// (writeBack then copies it into t).
at::Tensor denseOut(const at::Tensor& t) {
  return t.is_contiguous() ? t : at::empty_like(t, at::MemoryFormat::Contiguous);
}

// Copies `from` into `to` when they are different tensors (a contiguous stand-in for `to`).
void writeBack(const at::Tensor& to, const at::Tensor& from) {
  if (!to.is_same(from)) to.copy_(from.view_as(to));
}

// The root's list of world-size tensors for gather (its outputs) or scatter (its inputs), checked
// against the root's own tensor `own`; empty on the other ranks, which must pass none.
std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& own, int rank,
                                 int root, int size, const char* what, const char* kind) {
  if (rank != root) {
    TORCH_CHECK(lists.empty() || (lists.size() == 1 && lists[0].empty()), "collcomm ", what, ": only the root passes ",
                kind, " tensors");
    return {};
  }
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == size, "collcomm ", what,
              ": the root expects one ", kind, " list of world size (", size, ") tensors");
  for (const auto& t : lists[0]) {
    checkCpu(t, what);
    TORCH_CHECK(t.scalar_type() == own.scalar_type(), "collcomm ", what, ": ", kind, " type ", t.scalar_type(),
                " differs from ", own.scalar_type());
  }
  TORCH_CHECK(lists[0][root].numel() == own.numel(), "collcomm ", what, ": the root's own ", kind, " has ",
              lists[0][root].numel(), " elements, its other tensor ", own.numel());
  return lists[0];
}

bool sameShapes(const std::vector<at::Tensor>& ts, const at::Tensor& like) {
  return std::all_of(ts.begin(), ts.end(), [&](const at::Tensor& t) {
    return t.numel() == like.numel() && t.scalar_type() == like.scalar_type();
  });
}

// ccGroupStart/ccGroupEnd around a scope: the group is closed even when a call inside it throws,
// so this thread's group state never leaks into the next operation.
class GroupScope {
 public:
  GroupScope() : started_(ccGroupStart() == ccSuccess) {}
  ~GroupScope() {
    if (started_) (void)ccGroupEnd();
  }
  ccResult_t end() {
    started_ = false;
    return ccGroupEnd();
  }

 private:
  bool started_;
};

// One Task made of several, run in order (the coalesced variants of one operation).
Task sequence(std::vector<Task> parts) {
  auto shared = std::make_shared<std::vector<Task>>(std::move(parts));
  return Task{[shared] {
                for (auto& p : *shared) p.issue();
              },
              [shared] {
                for (auto& p : *shared) p.finish();
              }};
}

}  // namespace

// ---- Work

CollcommWork::CollcommWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

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
    : c10d::Backend(rank, size), timeout_(timeout), name_(std::move(name)) {
  ccUniqueId id;
  if (rank == 0) {
    ccResult_t res = ccGetUniqueId(&id);
    TORCH_CHECK(res == ccSuccess, "collcomm: ccGetUniqueId failed: ", ccGetLastError(nullptr));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id), "collcomm: the unique id in the store has ", bytes.size(),
                " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  ccConfig_t config = hostConfig(name_, timeout);
  ccResult_t res = ccCommInitRankConfig(&comm_, size, id, rank, &config);
  if (res != ccSuccess) {
    C10_THROW_ERROR(DistBackendError,
                    c10::str("collcomm: joining the communicator of group '", name_, "' as rank ", rank, " of ", size,
                             " failed: ", ccGetErrorString(res), ": ", ccGetLastError(nullptr)));
  }
  worker_ = std::make_unique<Worker>();
}

ProcessGroupCollcomm::ProcessGroupCollcomm(Adopt, ccComm_t comm, int rank, int size, std::chrono::milliseconds timeout,
                                           std::string name)
    : c10d::Backend(rank, size), comm_(comm), timeout_(timeout), name_(std::move(name)) {
  worker_ = std::make_unique<Worker>();
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupCollcomm::split(const c10::intrusive_ptr<c10d::Store>&,
                                                              const std::vector<int>& ranks,
                                                              const c10::intrusive_ptr<Options>& opts) {
  TORCH_CHECK(!coalescing_, "collcomm: split_group inside a coalescing block; end the block first");
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
  auto work = enqueue(c10d::OpType::UNKNOWN, none, Task{[this, color, key, &child, &name, timeout] {
                                                          ccConfig_t config = hostConfig(name, timeout);
                                                          check(ccCommSplit(comm_, color, key, &child, &config),
                                                                "split_group (ccCommSplit)");
                                                        },
                                                        {}});
  work->wait();  // rethrows the split's failure
  if (!member) return nullptr;
  TORCH_CHECK(child != nullptr, "collcomm: ccCommSplit gave no communicator to rank ", getRank(), " of group '",
              name_, "'");
  return c10::make_intrusive<ProcessGroupCollcomm>(Adopt{}, child, key, static_cast<int>(ranks.size()), timeout,
                                                   name);
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

void ProcessGroupCollcomm::shutdown() {
  std::lock_guard<std::mutex> lock(shutdownMutex_);
  if (shutDown_) return;
  shutDown_ = true;
  if (worker_) worker_->stop();  // after abort(), the call in flight ends within milliseconds
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
}

void ProcessGroupCollcomm::abort() {
  if (aborted_.exchange(true)) return;
  // ccCommRevoke interrupts the call in flight on the worker, which then fails its Work, and
  // keeps the handle valid, so a call the worker starts in the same instant is refused rather
  // than made on freed memory; the worker fails everything still queued without calling in.
  // shutdown() frees the communicator once the worker has stopped.
  std::lock_guard<std::mutex> lock(commMutex_);
  if (comm_ != nullptr) (void)ccCommRevoke(comm_, CC_REVOKE_DEFAULT);
}

void ProcessGroupCollcomm::check(ccResult_t result, const char* what) {
  if (result == ccSuccess) return;
  failed_.store(true);
  // An aborted group's communicator is revoked, not freed, until shutdown: its sentence is readable.
  if (aborted_.load())
    C10_THROW_ERROR(DistBackendError, c10::str("collcomm ", what, " on rank ", getRank(), " of group '", name_,
                                               "': the process group was aborted (", ccGetErrorString(result), ")"));
  const char* detail = ccGetLastError(comm_);
  C10_THROW_ERROR(DistBackendError,
                  c10::str("collcomm ", what, " failed on rank ", getRank(), " of group '", name_,
                           "': ", ccGetErrorString(result), ": ", detail != nullptr ? detail : "(no detail)"));
}

// ---- the worker side

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                             Task task) {
  auto work = c10::make_intrusive<CollcommWork>(getRank(), type, std::move(outputs));
  sequence_++;
  if (coalescing_) {
    coalescedTasks_.push_back(std::move(task));
    coalescedWorks_.push_back(work);
    return work;
  }
  TORCH_CHECK(!shutDown_, "collcomm: the process group '", name_, "' was shut down");
  worker_->post([this, work, task = std::move(task)]() mutable {
    std::vector<Task> tasks;
    tasks.push_back(std::move(task));
    std::exception_ptr error;
    try {
      runTasks(tasks, false);
    } catch (...) {
      error = std::current_exception();
    }
    work->complete(error);
  });
  return work;
}

void ProcessGroupCollcomm::runTasks(std::vector<Task>& tasks, bool grouped) {
  TORCH_CHECK(!aborted_.load(), "collcomm: the process group '", name_, "' was aborted");
  if (grouped) {
    GroupScope group;
    for (auto& t : tasks) t.issue();
    check(group.end(), "coalesced batch (ccGroupEnd)");
  } else {
    for (auto& t : tasks) t.issue();
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
  auto batch = c10::make_intrusive<CollcommWork>(getRank(), c10d::OpType::COALESCED, std::vector<at::Tensor>{});
  auto tasks = std::move(coalescedTasks_);
  auto works = std::move(coalescedWorks_);
  coalescedTasks_.clear();
  coalescedWorks_.clear();
  TORCH_CHECK(!shutDown_, "collcomm: the process group '", name_, "' was shut down");
  worker_->post([this, batch, tasks = std::move(tasks), works = std::move(works)]() mutable {
    std::exception_ptr error;
    try {
      runTasks(tasks, true);
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& w : works) w->complete(error);
    batch->complete(error);
  });
  return batch;
}

// ---- operations (each checks its arguments on the caller's thread, then queues a Task)

Task ProcessGroupCollcomm::allreduceTask(const at::Tensor& tensor, const c10d::ReduceOp& op) {
  checkReduction(tensor, op);
  auto buffer = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  return Task{[this, tensor, op, buffer, reduction] {
                *buffer = dense(tensor);
                *reduction = makeReduction(comm_, tensor, op);
                check(ccAllReduce(buffer->data_ptr(), buffer->data_ptr(), buffer->numel(), (*reduction)->type,
                                  (*reduction)->op, comm_, nullptr),
                      "all_reduce");
              },
              [tensor, buffer, reduction] {
                writeBack(tensor, *buffer);
                reduction->reset();
              }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allreduce(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceOptions& opts) {
  checkSingle(tensors, "all_reduce");
  TORCH_CHECK(!opts.sparseIndices.has_value(), "collcomm all_reduce: sparse tensors are not supported");
  return enqueue(c10d::OpType::ALLREDUCE, tensors, allreduceTask(tensors[0], opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                         const c10d::AllreduceCoalescedOptions& opts) {
  std::vector<Task> parts;
  for (auto& t : tensors) {
    checkCpu(t, "all_reduce_coalesced");
    parts.push_back(allreduceTask(t, opts.reduceOp));
  }
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, tensors, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::broadcast(std::vector<at::Tensor>& tensors,
                                                               const c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast");
  checkRoot(opts.rootRank, getSize(), "broadcast");
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(
      c10d::OpType::BROADCAST, tensors,
      Task{[this, tensor, buffer, root] {
             *buffer = dense(tensor);
             check(ccBroadcast(buffer->data_ptr(), buffer->data_ptr(), bytesOf(*buffer), ccUint8, root, comm_, nullptr),
                   "broadcast");
           },
           [tensor, buffer] { writeBack(tensor, *buffer); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::ReduceOptions& opts) {
  checkSingle(tensors, "reduce");
  checkRoot(opts.rootRank, getSize(), "reduce");
  at::Tensor tensor = tensors[0];
  checkReduction(tensor, opts.reduceOp);
  auto buffer = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  const int root = static_cast<int>(opts.rootRank);
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::REDUCE, tensors,
                 Task{[this, tensor, buffer, reduction, root, op] {
                        *buffer = dense(tensor);
                        *reduction = makeReduction(comm_, tensor, op);
                        check(ccReduce(buffer->data_ptr(), buffer->data_ptr(), buffer->numel(), (*reduction)->type,
                                       (*reduction)->op, root, comm_, nullptr),
                              "reduce");
                      },
                      [this, tensor, buffer, reduction, root] {
                        // Only the root's tensor holds the result; the others keep their input.
                        if (getRank() == root) writeBack(tensor, *buffer);
                        reduction->reset();
                      }});
}

Task ProcessGroupCollcomm::allgatherBaseTask(const at::Tensor& output, const at::Tensor& input) {
  checkCpu(output, "all_gather_into_tensor");
  checkCpu(input, "all_gather_into_tensor");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm all_gather_into_tensor: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "collcomm all_gather_into_tensor: output has ",
              output.numel(), " elements, expected world size (", getSize(), ") x input (", input.numel(), ")");
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  return Task{[this, output, input, in, out] {
                *in = dense(input);
                *out = denseOut(output);
                check(ccAllGather(in->data_ptr(), out->data_ptr(), bytesOf(*in), ccUint8, comm_, nullptr),
                      "all_gather_into_tensor");
              },
              [output, out] { writeBack(output, *out); }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::AllgatherOptions&) {
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output}, allgatherBaseTask(output, input));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                     std::vector<at::Tensor>& inputs,
                                                                                     const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputs.size() == inputs.size(), "collcomm allgather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  std::vector<Task> parts;
  for (size_t i = 0; i < inputs.size(); ++i) parts.push_back(allgatherBaseTask(outputs[i], inputs[i]));
  return enqueue(c10d::OpType::COALESCED, outputs, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions&) {
  checkSingle(inputs, "all_gather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "collcomm all_gather: expects one output list of world size (", getSize(), ") tensors");
  at::Tensor input = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  for (auto& o : outs) {
    checkCpu(o, "all_gather");
    TORCH_CHECK(o.scalar_type() == input.scalar_type(), "collcomm all_gather: output type ", o.scalar_type(),
                " differs from input type ", input.scalar_type());
  }
  TORCH_CHECK(outs[getRank()].numel() == input.numel(), "collcomm all_gather: this rank's output has ",
              outs[getRank()].numel(), " elements, its input ", input.numel());
  const int rank = getRank();
  const int size = getSize();
  if (sameShapes(outs, input)) {
    // Equal sizes: one ccAllGather into a flat buffer, then a copy into each output.
    auto flat = std::make_shared<at::Tensor>();
    auto in = std::make_shared<at::Tensor>();
    return enqueue(c10d::OpType::ALLGATHER, outs,
                   Task{[this, input, flat, in, size] {
                          *in = dense(input);
                          *flat = at::empty({size * input.numel()}, input.options());
                          check(ccAllGather(in->data_ptr(), flat->data_ptr(), bytesOf(*in), ccUint8, comm_, nullptr),
                                "all_gather");
                        },
                        [outs, flat, input] {
                          for (size_t r = 0; r < outs.size(); ++r)
                            outs[r].copy_(flat->narrow(0, r * input.numel(), input.numel()).view_as(outs[r]));
                        }});
  }
  // Uneven sizes (each rank's output says what that rank sends): grouped send/recv.
  auto in = std::make_shared<at::Tensor>();
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  return enqueue(c10d::OpType::ALLGATHER, outs,
                 Task{[this, input, outs, in, bufs, rank, size] {
                        *in = dense(input);
                        for (auto& o : outs) bufs->push_back(denseOut(o));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          check(ccSend(in->data_ptr(), bytesOf(*in), ccUint8, p, comm_, nullptr), "all_gather (send)");
                          check(ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, comm_, nullptr),
                                "all_gather (recv)");
                        }
                        check(group.end(), "all_gather (uneven)");
                        (*bufs)[rank].copy_(in->view_as((*bufs)[rank]));
                      },
                      [outs, bufs] {
                        for (size_t r = 0; r < outs.size(); ++r) writeBack(outs[r], (*bufs)[r]);
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::GatherOptions& opts) {
  checkSingle(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const int rank = getRank();
  const int size = getSize();
  checkRoot(root, size, "gather");
  std::vector<at::Tensor> outs = rootList(outputs, inputs[0], rank, root, size, "gather", "output");
  // Point to point, so each rank may send a different number of elements (the root's outputs say how many).
  at::Tensor input = inputs[0];
  auto in = std::make_shared<at::Tensor>();
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  return enqueue(c10d::OpType::GATHER, outs,
                 Task{[this, input, outs, in, bufs, rank, size, root] {
                        *in = dense(input);
                        if (rank != root) {
                          check(ccSend(in->data_ptr(), bytesOf(*in), ccUint8, root, comm_, nullptr), "gather (send)");
                          return;
                        }
                        for (auto& o : outs) bufs->push_back(denseOut(o));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p != rank)
                            check(ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, comm_, nullptr),
                                  "gather (recv)");
                        }
                        check(group.end(), "gather");
                        (*bufs)[rank].copy_(in->view_as((*bufs)[rank]));
                      },
                      [outs, bufs] {
                        for (size_t r = 0; r < bufs->size(); ++r) writeBack(outs[r], (*bufs)[r]);
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ScatterOptions& opts) {
  checkSingle(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const int rank = getRank();
  const int size = getSize();
  checkRoot(root, size, "scatter");
  std::vector<at::Tensor> ins = rootList(inputs, outputs[0], rank, root, size, "scatter", "input");
  at::Tensor output = outputs[0];
  auto out = std::make_shared<at::Tensor>();
  return enqueue(
      c10d::OpType::SCATTER, outputs,
      Task{[this, output, ins, out, rank, size, root] {
             *out = denseOut(output);
             if (rank != root) {
               check(ccRecv(out->data_ptr(), bytesOf(*out), ccUint8, root, comm_, nullptr), "scatter (recv)");
               return;
             }
             std::vector<at::Tensor> dins;
             for (auto& i : ins) dins.push_back(dense(i));
             GroupScope group;
             for (int p = 0; p < size; ++p) {
               if (p != rank)
                 check(ccSend(dins[p].data_ptr(), bytesOf(dins[p]), ccUint8, p, comm_, nullptr), "scatter (send)");
             }
             check(group.end(), "scatter");
             out->copy_(dins[rank].view_as(*out));
           },
           [output, out] { writeBack(output, *out); }});
}

Task ProcessGroupCollcomm::reduceScatterBaseTask(const at::Tensor& output, const at::Tensor& input,
                                                 const c10d::ReduceOp& op) {
  checkCpu(output, "reduce_scatter_tensor");
  checkCpu(input, "reduce_scatter_tensor");
  checkReduction(input, op);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm reduce_scatter_tensor: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "collcomm reduce_scatter_tensor: input has ", input.numel(),
              " elements, expected world size (", getSize(), ") x output (", output.numel(), ")");
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  return Task{[this, output, input, op, in, out, reduction] {
                *in = dense(input);
                *out = denseOut(output);
                *reduction = makeReduction(comm_, input, op);
                check(ccReduceScatter(in->data_ptr(), out->data_ptr(), out->numel(), (*reduction)->type,
                                      (*reduction)->op, comm_, nullptr),
                      "reduce_scatter_tensor");
              },
              [output, out, reduction] {
                writeBack(output, *out);
                reduction->reset();
              }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                          const c10d::ReduceScatterOptions& opts) {
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, reduceScatterBaseTask(output, input, opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "collcomm reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  std::vector<Task> parts;
  for (size_t i = 0; i < inputs.size(); ++i)
    parts.push_back(reduceScatterBaseTask(outputs[i], inputs[i], opts.reduceOp));
  return enqueue(c10d::OpType::COALESCED, outputs, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                                    const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputs, "reduce_scatter");
  const int size = getSize();
  const int rank = getRank();
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size,
              "collcomm reduce_scatter: expects one input list of world size (", size, ") tensors");
  at::Tensor output = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  for (auto& i : ins) {
    checkCpu(i, "reduce_scatter");
    TORCH_CHECK(i.scalar_type() == output.scalar_type(), "collcomm reduce_scatter: input type ", i.scalar_type(),
                " differs from output type ", output.scalar_type());
  }
  checkReduction(output, opts.reduceOp);
  TORCH_CHECK(ins[rank].numel() == output.numel(), "collcomm reduce_scatter: input ", rank, " has ", ins[rank].numel(),
              " elements, this rank's output ", output.numel());
  c10d::ReduceOp op = opts.reduceOp;
  auto out = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  if (sameShapes(ins, output)) {
    // Equal sizes: the list laid end to end is ccReduceScatter's input.
    return enqueue(c10d::OpType::REDUCE_SCATTER, outputs,
                   Task{[this, output, ins, op, out, reduction] {
                          std::vector<at::Tensor> flat;
                          for (auto& i : ins) flat.push_back(i.reshape({-1}));
                          at::Tensor in = at::cat(flat);
                          *out = denseOut(output);
                          *reduction = makeReduction(comm_, output, op);
                          check(ccReduceScatter(in.data_ptr(), out->data_ptr(), out->numel(), (*reduction)->type,
                                                (*reduction)->op, comm_, nullptr),
                                "reduce_scatter");
                        },
                        [output, out, reduction] {
                          writeBack(output, *out);
                          reduction->reset();
                        }});
  }
  // Uneven sizes: one ccReduce per rank, of that rank's part, to that rank.
  return enqueue(
      c10d::OpType::REDUCE_SCATTER, outputs,
      Task{[this, output, ins, op, out, reduction, rank, size] {
             *out = denseOut(output);
             *reduction = makeReduction(comm_, output, op);
             for (int p = 0; p < size; ++p) {
               at::Tensor in = dense(ins[p]);
               void* recv = p == rank ? out->data_ptr() : in.data_ptr();
               check(ccReduce(in.data_ptr(), recv, in.numel(), (*reduction)->type, (*reduction)->op, p, comm_, nullptr),
                     "reduce_scatter (uneven)");
             }
           },
           [output, out, reduction] {
             writeBack(output, *out);
             reduction->reset();
           }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& outputSplits,
                                                                   std::vector<int64_t>& inputSplits,
                                                                   const c10d::AllToAllOptions&) {
  checkCpu(output, "all_to_all_single");
  checkCpu(input, "all_to_all_single");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm all_to_all_single: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  const int size = getSize();
  const int rank = getRank();
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size == 0, "collcomm all_to_all_single: input (",
                input.numel(), ") and output (", output.numel(), ") must have the same size, divisible by ", size);
    return enqueue(c10d::OpType::ALLTOALL_BASE, {output},
                   Task{[this, input, output, in, out, size] {
                          *in = dense(input);
                          *out = denseOut(output);
                          check(
                              ccAlltoAll(in->data_ptr(), out->data_ptr(), bytesOf(*in) / size, ccUint8, comm_, nullptr),
                              "all_to_all_single");
                        },
                        [output, out] { writeBack(output, *out); }});
  }
  // Splits along dim 0, in rows of the rest of the shape: grouped send/recv, as NCCL users do.
  auto splitsOf = [&](const std::vector<int64_t>& given, const at::Tensor& t, const char* which) {
    std::vector<int64_t> rows = given;
    if (rows.empty()) {
      TORCH_CHECK(t.dim() > 0 && t.size(0) % size == 0, "collcomm all_to_all_single: ", which, " dim 0 (",
                  t.dim() > 0 ? t.size(0) : 0, ") is not divisible by ", size);
      rows.assign(size, t.size(0) / size);
    }
    TORCH_CHECK(static_cast<int>(rows.size()) == size, "collcomm all_to_all_single: ", rows.size(), " ", which,
                " split sizes for ", size, " ranks");
    int64_t total = 0;
    for (int64_t r : rows) {
      TORCH_CHECK(r >= 0, "collcomm all_to_all_single: negative split size ", r);
      total += r;
    }
    TORCH_CHECK(t.dim() > 0 && total == t.size(0), "collcomm all_to_all_single: ", which, " split sizes add up to ",
                total, ", dim 0 is ", t.dim() > 0 ? t.size(0) : 0);
    return rows;
  };
  std::vector<int64_t> sendRows = splitsOf(inputSplits, input, "input");
  std::vector<int64_t> recvRows = splitsOf(outputSplits, output, "output");
  return enqueue(c10d::OpType::ALLTOALL_BASE, {output},
                 Task{[this, input, output, in, out, sendRows, recvRows, rank, size] {
                        *in = dense(input);
                        *out = denseOut(output);
                        const size_t inRow = input.size(0) > 0 ? bytesOf(*in) / input.size(0) : 0;
                        const size_t outRow = output.size(0) > 0 ? bytesOf(*out) / output.size(0) : 0;
                        auto* src = static_cast<char*>(in->data_ptr());
                        auto* dst = static_cast<char*>(out->data_ptr());
                        std::vector<size_t> sendOff(size), recvOff(size);
                        for (int p = 1; p < size; ++p) {
                          sendOff[p] = sendOff[p - 1] + sendRows[p - 1] * inRow;
                          recvOff[p] = recvOff[p - 1] + recvRows[p - 1] * outRow;
                        }
                        TORCH_CHECK(sendRows[rank] * inRow == recvRows[rank] * outRow,
                                    "collcomm all_to_all_single: this rank sends itself ", sendRows[rank] * inRow,
                                    " bytes but expects ", recvRows[rank] * outRow);
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          if (sendRows[p] > 0)
                            check(ccSend(src + sendOff[p], sendRows[p] * inRow, ccUint8, p, comm_, nullptr),
                                  "all_to_all_single (send)");
                          if (recvRows[p] > 0)
                            check(ccRecv(dst + recvOff[p], recvRows[p] * outRow, ccUint8, p, comm_, nullptr),
                                  "all_to_all_single (recv)");
                        }
                        check(group.end(), "all_to_all_single");
                        std::memcpy(dst + recvOff[rank], src + sendOff[rank], sendRows[rank] * inRow);
                      },
                      [output, out] { writeBack(output, *out); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::alltoall(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllToAllOptions&) {
  const int size = getSize();
  const int rank = getRank();
  TORCH_CHECK(static_cast<int>(outputs.size()) == size && static_cast<int>(inputs.size()) == size,
              "collcomm all_to_all: expects world size (", size, ") inputs and outputs");
  for (int p = 0; p < size; ++p) {
    checkCpu(inputs[p], "all_to_all");
    checkCpu(outputs[p], "all_to_all");
    TORCH_CHECK(inputs[p].scalar_type() == outputs[p].scalar_type(), "collcomm all_to_all: types differ");
  }
  TORCH_CHECK(bytesOf(inputs[rank]) == bytesOf(outputs[rank]),
              "collcomm all_to_all: this rank's own input and output "
              "differ in size");
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> outs = outputs;
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  return enqueue(c10d::OpType::ALLTOALL, outputs,
                 Task{[this, ins, outs, bufs, rank, size] {
                        std::vector<at::Tensor> dins;
                        for (auto& i : ins) dins.push_back(dense(i));
                        for (auto& o : outs) bufs->push_back(denseOut(o));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          if (bytesOf(dins[p]) > 0)
                            check(ccSend(dins[p].data_ptr(), bytesOf(dins[p]), ccUint8, p, comm_, nullptr),
                                  "all_to_all (send)");
                          if (bytesOf((*bufs)[p]) > 0)
                            check(ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, comm_, nullptr),
                                  "all_to_all (recv)");
                        }
                        check(group.end(), "all_to_all");
                        (*bufs)[rank].copy_(dins[rank].view_as((*bufs)[rank]));
                      },
                      [outs, bufs] {
                        for (size_t r = 0; r < outs.size(); ++r) writeBack(outs[r], (*bufs)[r]);
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::send(std::vector<at::Tensor>& tensors, int dstRank, int) {
  checkSingle(tensors, "send");
  TORCH_CHECK(dstRank >= 0 && dstRank < getSize() && dstRank != getRank(), "collcomm send: destination ", dstRank,
              " is not another rank of this group of ", getSize());
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  return enqueue(c10d::OpType::SEND, tensors,
                 Task{[this, tensor, buffer, dstRank] {
                        *buffer = dense(tensor);
                        check(ccSend(buffer->data_ptr(), bytesOf(*buffer), ccUint8, dstRank, comm_, nullptr), "send");
                      },
                      [buffer] { buffer->reset(); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::recv(std::vector<at::Tensor>& tensors, int srcRank, int) {
  checkSingle(tensors, "recv");
  TORCH_CHECK(srcRank >= 0 && srcRank < getSize() && srcRank != getRank(), "collcomm recv: source ", srcRank,
              " is not another rank of this group of ", getSize());
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  return enqueue(c10d::OpType::RECV, tensors,
                 Task{[this, tensor, buffer, srcRank] {
                        *buffer = denseOut(tensor);
                        check(ccRecv(buffer->data_ptr(), bytesOf(*buffer), ccUint8, srcRank, comm_, nullptr), "recv");
                      },
                      [tensor, buffer] { writeBack(tensor, *buffer); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::barrier(const c10d::BarrierOptions&) {
  // A one-byte all-reduce queued behind everything issued before: waiting on it waits for those too.
  auto token = std::make_shared<at::Tensor>(at::zeros({1}, at::kByte));
  return enqueue(c10d::OpType::BARRIER, {},
                 Task{[this, token] {
                        check(ccAllReduce(token->data_ptr(), token->data_ptr(), 1, ccUint8, ccMax, comm_, nullptr),
                              "barrier");
                      },
                      {}});
}

}  // namespace collcomm_torch
