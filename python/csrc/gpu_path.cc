// CUDA tensors on GPU communicators (gpu_path.h). Compiled where torch and the toolkit have CUDA.
#include "gpu_path.h"

#include <ATen/core/ivalue.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "comm_setup.h"

namespace collcomm_torch {
namespace {

// How often the watchdog looks at what the GPU has run: a Work completes (and the tensors its Task
// holds are released) at most this long after its stream ran it.
constexpr auto kWatchPeriod = std::chrono::milliseconds(2);

// A device's communicator and the group's stream on it. Shared with the Works it runs, which ask
// it for the failure that ended them.
struct DeviceComm {
  ccComm_t comm = nullptr;
  c10::cuda::CUDAStream stream;
  // One collcomm call on `comm` at a time from this layer (a launch's calls, the watchdog's
  // polls): a failing call writes the sentence that ccGetLastError reads.
  std::mutex callMutex;
  std::string sentence;  // the failure, once seen (under callMutex)

  int order;  // the group's how-many-th communicator: every rank splits them in this order

  DeviceComm(ccComm_t c, c10::cuda::CUDAStream s, int o) : comm(c), stream(s), order(o) {}

  // The communicator's failure as collcomm reports it (a kernel that timed out or lost its peer),
  // remembered once seen; empty while it is healthy (or once destroyed without one: a Work may
  // outlive its group).
  std::string failure() {
    std::lock_guard<std::mutex> lock(callMutex);
    if (sentence.empty() && comm != nullptr) {
      ccResult_t state = ccSuccess;
      if (ccCommGetAsyncError(comm, &state) != ccSuccess || state == ccSuccess || state == ccInProgress) return {};
      const char* detail = ccGetLastError(comm);
      sentence = c10::str(ccGetErrorString(state), ": ", detail != nullptr ? detail : "(no detail)");
    }
    return sentence;
  }
};

// The Work of an operation on CUDA tensors: done when the group's stream has run it (the watchdog
// says so), failed with the communicator's sentence when a kernel of it failed.
class CudaWork : public c10d::Work {
 public:
  CudaWork(int rank, c10d::OpType type, at::Device device, std::vector<at::Tensor> outputs, std::string what)
      : c10d::Work(rank, type),
        device_(device),
        outputs_(std::move(outputs)),
        what_(std::move(what)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                         std::vector<c10::Device>{device})) {}

  // Called once, on the caller's thread, after the operation was enqueued on `dc`'s stream.
  void bind(std::shared_ptr<DeviceComm> dc, std::shared_ptr<c10::cuda::CUDAEvent> end) {
    const c10::cuda::CUDAStream stream = dc->stream;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      dc_ = std::move(dc);
      end_ = std::move(end);
    }
    // Marked on the group's stream (a consumer of the future waits for that stream, as
    // ProcessGroupNCCL's futures make DDP's hooks do), and outside the lock: marking runs the
    // future's callbacks, which may ask this Work.
    c10::cuda::CUDAStreamGuard guard(stream);
    future_->markCompleted(c10::IValue(outputs_));
  }

  // The watchdog's (or a failed launch's) verdict.
  void settle(const std::string& failure) {
    std::exception_ptr error;
    if (!failure.empty()) {
      try {
        C10_THROW_ERROR(DistBackendError, c10::str("collcomm ", what_, " on ", device_, " failed: ", failure));
      } catch (...) {
        error = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (completed_) return;
      completed_ = true;
      exception_ = error;
      cv_.notify_all();
    }
    // A launch that failed before it was enqueued never marked the future: its waiters get the error.
    if (error && !future_->completed()) future_->setError(error);
  }

  bool isCompleted() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }

  // The caller's current stream waits for the operation; the host does not. With a timeout the
  // host also waits for the watchdog's verdict, at most that long.
  bool wait(std::chrono::milliseconds timeout) override {
    synchronize();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!end_ && !completed_) return true;  // in an open coalescing block (synchronize())
    }
    if (timeout != kNoTimeout) {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, timeout, [this] { return completed_; }))
        C10_THROW_ERROR(DistBackendError,
                        c10::str("collcomm ", what_, " on ", device_, ": not done after ", timeout.count(), " ms"));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  void synchronize() override {
    std::shared_ptr<DeviceComm> dc;
    std::shared_ptr<c10::cuda::CUDAEvent> end;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (exception_) std::rethrow_exception(exception_);
      // An operation of an open coalescing block runs when the block ends: until then there is
      // nothing to wait for, as with ProcessGroupNCCL (the block's own Work is the one to wait for).
      if (!end_ && !completed_) return;
      dc = dc_;
      end = end_;
    }
    if (end) end->block(c10::cuda::getCurrentCUDAStream(device_.index()));
    // A failure already seen is said now rather than at the next call.
    if (dc) {
      const std::string failure = dc->failure();
      if (!failure.empty()) settle(failure);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_) std::rethrow_exception(exception_);
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  at::Device device_;
  std::vector<at::Tensor> outputs_;
  std::string what_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<DeviceComm> dc_;
  std::shared_ptr<c10::cuda::CUDAEvent> end_;
};

// What the watchdog keeps of one launch until its stream has run it.
struct Pending {
  std::shared_ptr<DeviceComm> dc;
  std::shared_ptr<c10::cuda::CUDAEvent> end;
  // Holds every tensor the launch uses, until its stream has run it.
  std::vector<Task> tasks;
  // Emptied once settled.
  std::vector<c10::intrusive_ptr<CudaWork>> works;
};

// The text of an exception, for a Work's sentence.
std::string messageOf(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace

struct GpuPath::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  int rank;
  int size;
  std::chrono::milliseconds timeout;
  std::string name;

  // Held only for short bookkeeping, never across a collective or a wait: abort() takes it.
  std::mutex mutex;  // guards comms, pending, stopping, aborted
  std::map<c10::DeviceIndex, std::shared_ptr<DeviceComm>> comms;
  std::condition_variable cv;
  std::deque<Pending> pending;
  bool stopping = false;
  bool aborted = false;
  std::thread watchdog;
  // Serialises making and splitting communicators (collectives of the group, bounded by its
  // timeout), and guards `made`.
  std::mutex makeMutex;
  int made = 0;  // communicators made so far: the next one's store key and its place in split order

  std::string commName(const std::string& group, c10::DeviceIndex device) const {
    return group + ":cuda:" + std::to_string(device);
  }

  // Records a communicator for `device`; false when the group is shutting down (the caller frees it).
  bool adopt(c10::DeviceIndex device, ccComm_t comm, int order) {
    auto dc = std::make_shared<DeviceComm>(comm, c10::cuda::getStreamFromPool(false, device), order);
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping) return false;
    comms[device] = std::move(dc);
    return true;
  }

  std::shared_ptr<DeviceComm> find(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex);
    TORCH_CHECK(!stopping, "collcomm: the process group '", name, "' was shut down");
    auto it = comms.find(device);
    return it != comms.end() ? it->second : nullptr;
  }

  // The communicator of `device`, made now if this is the group's first use of it: every rank at
  // once, a collective of the whole group (its first operation there must be one every rank
  // makes).
  std::shared_ptr<DeviceComm> commFor(c10::DeviceIndex device) {
    if (auto dc = find(device)) return dc;
    std::lock_guard<std::mutex> making(makeMutex);
    if (auto dc = find(device)) return dc;  // made by another thread meanwhile
    TORCH_CHECK(store, "collcomm: group '", name,
                "' has no store to make its communicator on cuda:", static_cast<int>(device), " with");
    const int order = made++;
    const ccUniqueId id = exchangeUniqueId(*store, "collcomm_unique_id_cuda_" + std::to_string(order), rank);
    const std::string cname = commName(name, device);
    ccConfig_t c = commConfig(device, cname, timeout);
    ccComm_t comm = nullptr;
    c10::cuda::CUDAGuard guard(device);
    ccResult_t res = ccCommInitRankConfig(&comm, size, id, rank, &c);
    if (res != ccSuccess)
      C10_THROW_ERROR(DistBackendError, c10::str("collcomm: making the GPU communicator of group '", name, "' on cuda:",
                                                 static_cast<int>(device), " as rank ", rank, " of ", size,
                                                 " failed: ", ccGetErrorString(res), ": ", ccGetLastError(nullptr)));
    if (!adopt(device, comm, order)) {
      (void)ccCommAbort(comm);
      TORCH_CHECK(false, "collcomm: the process group '", name, "' was shut down");
    }
    return find(device);
  }

  void startWatchdog() {
    if (!watchdog.joinable()) watchdog = std::thread([this] { watch(); });
  }

  // Settles each launch once its stream has run it: done, or failed with its communicator's
  // sentence. Polls without `mutex` (a failure() may wait for a launch's calls), taking the
  // pending launches out and putting back, ahead of newer ones, those still running. Queries
  // events in relaxed capture mode: a thread capturing a graph in global mode (torch's default)
  // would otherwise have its capture invalidated by them.
  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      cv.wait(lock, [this] { return stopping || !pending.empty(); });
      if (pending.empty()) return;
      std::deque<Pending> polled;
      polled.swap(pending);
      lock.unlock();
      std::deque<Pending> running;
      {
        c10::cuda::CUDAStreamCaptureModeGuard relaxed(cudaStreamCaptureModeRelaxed);
        for (Pending& p : polled) {
          // A launch that ran while its communicator failed is counted failed: the failure may be
          // its own kernel's (a launch that ran before the previous poll was settled by it). Its
          // Works fail at once; its tensors are kept until the stream has passed it (the kernels
          // end at the deadline, or at once when revoked), as what is queued behind a failed
          // kernel still runs.
          bool ran;
          std::string failure;
          try {
            ran = p.end->query();
            failure = p.dc->failure();
          } catch (...) {
            ran = true;  // a CUDA error: the stream will run nothing more
            failure = "CUDA failed while the watchdog looked at the operation: " + messageOf(std::current_exception());
          }
          if (ran || !failure.empty()) {
            for (auto& w : p.works) w->settle(failure);
            p.works.clear();
          }
          if (ran) {
            // A Task may still hold a PreMulSum op (its issue threw before finish): its
            // ccRedOpDestroy is a call on the communicator like a launch's.
            std::lock_guard<std::mutex> calls(p.dc->callMutex);
            p.tasks.clear();
          } else {
            running.push_back(std::move(p));
          }
        }
      }
      polled.clear();
      std::this_thread::sleep_for(kWatchPeriod);
      lock.lock();
      for (auto it = running.rbegin(); it != running.rend(); ++it) pending.push_front(std::move(*it));
    }
  }
};

bool GpuPath::built() { return true; }

GpuPath::GpuPath(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
                 std::string name)
    : impl_(std::make_unique<Impl>()) {
  impl_->store = std::move(store);
  impl_->rank = rank;
  impl_->size = size;
  impl_->timeout = timeout;
  impl_->name = std::move(name);
}

GpuPath::~GpuPath() {
  try {
    shutdown();
  } catch (...) {
    // A destructor must not throw; shutdown already said what it could.
  }
}

void GpuPath::connect(at::Device device) {
  TORCH_CHECK(device.is_cuda(), "collcomm: eager connection needs a CUDA device, got ", device);
  (void)impl_->commFor(device.index());
}

c10::intrusive_ptr<c10d::Work> GpuPath::newWork(at::Device device, c10d::OpType type, std::vector<at::Tensor> outputs) {
  return c10::make_intrusive<CudaWork>(impl_->rank, type, device, std::move(outputs), c10d::opTypeToString(type));
}

void GpuPath::launch(at::Device device, std::vector<Task> tasks, bool grouped, const TaskRunner& run,
                     const std::vector<c10::intrusive_ptr<c10d::Work>>& works) {
  std::vector<c10::intrusive_ptr<CudaWork>> cudaWorks;
  for (const auto& w : works) cudaWorks.push_back(c10::static_intrusive_pointer_cast<CudaWork>(w));
  // Every way out settles the Works (a Work never settled would say it succeeded at wait()).
  auto fail = [&](const std::exception_ptr& error) {
    for (auto& w : cudaWorks) w->settle(messageOf(error));
    std::rethrow_exception(error);
  };
  std::shared_ptr<DeviceComm> dc;
  std::shared_ptr<c10::cuda::CUDAEvent> end;
  std::exception_ptr error;
  bool capturing = false;
  try {
    dc = impl_->commFor(device.index());
    const std::string failure = dc->failure();
    if (!failure.empty())
      C10_THROW_ERROR(DistBackendError, c10::str("collcomm: the GPU communicator of group '", impl_->name, "' on ",
                                                 device, " failed earlier: ", failure));
    c10::cuda::CUDAGuard deviceGuard(device);
    // The group's stream starts where the caller's stream is now, so it sees what the caller wrote.
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(device.index());
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(caller.stream(), &capture));
    capturing = capture != cudaStreamCaptureStatusNone;
    c10::cuda::CUDAEvent ready;
    ready.record(caller);
    ready.block(dc->stream);
    end = std::make_shared<c10::cuda::CUDAEvent>();
    c10::cuda::CUDAStreamGuard streamGuard(dc->stream);
    std::lock_guard<std::mutex> calls(dc->callMutex);
    try {
      run(tasks, grouped, Target{dc->comm, static_cast<ccStream_t>(dc->stream.stream())});
    } catch (...) {
      error = std::current_exception();
    }
    // After a failure too: what was enqueued before it still runs, and its tensors must outlive it.
    end->record(dc->stream);
  } catch (...) {
    fail(std::current_exception());
  }
  // A graph being captured runs the launch at each replay, not now: nothing to watch, and the
  // tensors belong to the graph's owner, as with NCCL.
  if (!error) {
    for (auto& w : cudaWorks) w->bind(dc, end);
    if (capturing)
      for (auto& w : cudaWorks) w->settle({});
  }
  if (!capturing) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->pending.push_back(Pending{dc, end, std::move(tasks), error ? decltype(cudaWorks){} : cudaWorks});
    impl_->startWatchdog();
    impl_->cv.notify_one();
  }
  if (error) fail(error);
}

void GpuPath::split(GpuPath* child, int color, int key) {
  std::lock_guard<std::mutex> making(impl_->makeMutex);
  std::vector<std::shared_ptr<DeviceComm>> parents;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (auto& [device, dc] : impl_->comms) parents.push_back(dc);
  }
  // In the order the communicators were made, which every rank shares (device indices need not).
  std::sort(parents.begin(), parents.end(), [](const auto& a, const auto& b) { return a->order < b->order; });
  for (const auto& dc : parents) {
    const c10::DeviceIndex device = dc->stream.device_index();
    const std::string cname = impl_->commName(child != nullptr ? child->impl_->name : impl_->name + ":split", device);
    ccConfig_t c = commConfig(device, cname, impl_->timeout);
    ccComm_t made = nullptr;
    c10::cuda::CUDAGuard guard(device);
    ccResult_t res;
    {
      std::lock_guard<std::mutex> calls(dc->callMutex);
      res = ccCommSplit(dc->comm, color, key, &made, &c);
    }
    if (res != ccSuccess)
      C10_THROW_ERROR(DistBackendError, c10::str("collcomm: splitting the GPU communicator of group '", impl_->name,
                                                 "' on cuda:", static_cast<int>(device),
                                                 " failed: ", ccGetErrorString(res), ": ", ccGetLastError(dc->comm)));
    if (child != nullptr && made != nullptr) {
      std::lock_guard<std::mutex> childMaking(child->impl_->makeMutex);
      if (!child->impl_->adopt(device, made, child->impl_->made++)) (void)ccCommAbort(made);
    }
  }
}

void GpuPath::abort() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->aborted = true;
  // Revoke may run while a launch is inside a call of that communicator: it is made for that.
  for (auto& [device, dc] : impl_->comms) (void)ccCommRevoke(dc->comm, CC_REVOKE_DEFAULT);
}

void GpuPath::shutdown() {
  std::map<c10::DeviceIndex, std::shared_ptr<DeviceComm>> comms;
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (impl_->stopping) return;
    impl_->stopping = true;
    // Taken out under the lock: an abort() from now on finds none to revoke.
    comms.swap(impl_->comms);
    aborted = impl_->aborted;
  }
  impl_->cv.notify_one();
  // Every kernel ends by its deadline (or at once when revoked), so these waits end too. A CUDA
  // error here is reported after the rest is torn down.
  std::exception_ptr error;
  for (auto& [device, dc] : comms) {
    try {
      dc->stream.synchronize();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (impl_->watchdog.joinable()) impl_->watchdog.join();
  for (auto& [device, dc] : comms) {
    // A communicator that failed or was revoked cannot finalize in step with peers that are gone.
    const bool broken = aborted || error || !dc->failure().empty();
    std::lock_guard<std::mutex> calls(dc->callMutex);
    if (broken) {
      (void)ccCommAbort(dc->comm);
    } else {
      (void)ccCommDestroy(dc->comm);
    }
    dc->comm = nullptr;  // Works that outlive the group ask failure(), which then asks nothing
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace collcomm_torch
