// The CUDA executor's makers in a build without CUDA (COLLCOMM_CUDA=OFF, or no nvcc): a GPU
// communicator is refused with a sentence, never quietly given a host one.
#include "device/device_memory.h"
#include "device/executor.h"

namespace collcomm::detail {

Status checkCudaDevice(int device, const char* what) {
  return CC_ERROR(Status::kInvalidUsage,
                  "%s = %d asks for a communicator on CUDA device %d, but this build of collcomm has no CUDA "
                  "executor (built without CUDA: configure with -DCOLLCOMM_CUDA=ON); pass CC_DEVICE_HOST (or leave it "
                  "unset) for a host communicator, which takes host pointers",
                  what, device, device);
}

Status cudaAllocOnCurrentDevice(size_t, void** ptr) {
  *ptr = nullptr;
  return kOk;
}

Status cudaFreeDeviceMemory(void*) {
  return CC_ERROR(Status::kInternalError, "device memory to free in a build without CUDA");
}

bool cudaPointerIsOnDevice(const void*, int) { return false; }

Status cudaDeviceBusId(int device, int64_t*) {
  return CC_ERROR(Status::kInvalidUsage, "CUDA device %d has no bus id in a build without CUDA", device);
}

bool cudaDeviceUsesMps(int) { return false; }

ScopedDevice::ScopedDevice(int) {}
ScopedDevice::~ScopedDevice() = default;

Status makeCudaExecutor(const ExecSetup& setup, std::unique_ptr<Executor>*) {
  return CC_ERROR(Status::kInvalidUsage, "rank %d: this build of collcomm has no CUDA executor", setup.rank);
}

}  // namespace collcomm::detail
