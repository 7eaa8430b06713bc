// extern "C" memory calls in NCCL's shapes: ccMemAlloc/ccMemFree (device memory of the current
// CUDA device, or page-aligned host memory where there is none) and ccCommRegister/
// ccCommDeregister (a buffer's registration with a communicator, kept until deregistered or the
// communicator is freed; no algorithm reads registered buffers differently yet: docs/gpu.md).
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/api_scope.h"
#include "core/enqueue.h"
#include "device/device_memory.h"

using namespace collcomm::detail;

namespace {

constexpr size_t kHostAlign = 4096;  // a page: what a copy engine or registration would want

// Every live ccMemAlloc block and whether it is device memory, so that ccMemFree frees it the way
// it came and refuses pointers it did not give.
struct Allocations {
  std::mutex mutex;
  std::unordered_map<void*, bool> onDevice;
};
Allocations& allocations() {
  static Allocations* all = new Allocations;  // never destroyed: frees may come from exit handlers
  return *all;
}

Status memAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccMemAlloc: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return kOk;
  if (size > SIZE_MAX - kHostAlign)
    return CC_ERROR(Status::kInvalidArgument, "ccMemAlloc: size %zu is larger than any allocation can be", size);
  void* p = nullptr;
  CC_CHECK(cudaAllocOnCurrentDevice(size, &p));
  const bool onDevice = p != nullptr;
  if (!onDevice) {
    p = aligned_alloc(kHostAlign, (size + kHostAlign - 1) / kHostAlign * kHostAlign);
    if (p == nullptr) return CC_ERROR(Status::kSystemError, "ccMemAlloc: no host memory for %zu bytes", size);
  }
  Allocations& all = allocations();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.onDevice[p] = onDevice;
  *ptr = p;
  return kOk;
}

Status memFree(void* ptr) {
  if (ptr == nullptr) return kOk;
  bool onDevice = false;
  {
    Allocations& all = allocations();
    std::lock_guard<std::mutex> lock(all.mutex);
    const auto it = all.onDevice.find(ptr);
    if (it == all.onDevice.end())
      return CC_ERROR(Status::kInvalidArgument, "ccMemFree: %p is not a live block of ccMemAlloc (never given, or "
                      "freed already)", ptr);
    onDevice = it->second;
    all.onDevice.erase(it);
  }
  if (onDevice) return cudaFreeDeviceMemory(ptr);
  free(ptr);
  return kOk;
}

Status commRegister(ccComm* comm, void* buff, size_t size, void** handle) {
  if (handle == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommRegister: handle is NULL");
  *handle = nullptr;
  if (buff == nullptr) return CC_ERROR(Status::kInvalidArgument, "ccCommRegister: buff is NULL");
  if (size == 0) return CC_ERROR(Status::kInvalidArgument, "ccCommRegister: size is 0");
  if (comm->gpu() != nullptr && !cudaPointerIsOnDevice(buff, comm->config.device))
    return CC_ERROR(Status::kInvalidArgument,
                    "ccCommRegister on rank %d: buff %p is not memory of CUDA device %d, the communicator's device",
                    comm->rank, buff, comm->config.device);
  comm->registrations.push_back(std::make_unique<UserRegistration>(UserRegistration{buff, size}));
  *handle = comm->registrations.back().get();
  return kOk;
}

Status commDeregister(ccComm* comm, void* handle) {
  auto& regs = comm->registrations;
  for (auto it = regs.begin(); it != regs.end(); ++it) {
    if (it->get() != handle) continue;
    regs.erase(it);
    return kOk;
  }
  return CC_ERROR(Status::kInvalidArgument,
                  "ccCommDeregister on rank %d: handle %p is not a live registration of this communicator", comm->rank,
                  handle);
}

}  // namespace

extern "C" {

ccResult_t ccMemAlloc(void** ptr, size_t size) {
  clearThreadLastError();
  return toResult(memAlloc(ptr, size));
}

ccResult_t ccMemFree(void* ptr) {
  clearThreadLastError();
  return toResult(memFree(ptr));
}

ccResult_t ccCommRegister(const ccComm_t comm, void* buff, size_t size, void** handle) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s)) s = commRegister(comm, buff, size, handle);
  return scope.finish(s);
}

ccResult_t ccCommDeregister(const ccComm_t comm, void* handle) {
  ApiScope scope(comm);
  Status s = checkComm(comm);
  if (isOk(s)) s = commDeregister(comm, handle);
  return scope.finish(s);
}

}  // extern "C"
