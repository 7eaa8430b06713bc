// cuMem* allocations shared between processes as file descriptors (see cuda_vmm.h).
#include "transport/cuda/cuda_vmm.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <mutex>

namespace collcomm::detail {
namespace {

// The driver calls this file makes, found once through the runtime.
struct Driver {
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemExportToShareableHandle) exportHandle = nullptr;
  decltype(&::cuMemImportFromShareableHandle) importHandle = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemAddressFree) addressFree = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) setAccess = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemGetAllocationPropertiesFromHandle) propertiesOf = nullptr;
  bool ok = false;
};

template <class Fn>
bool lookUp(const char* symbol, Fn* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  // 12000: the ABI these entry points have had since CUDA 12.0.
  if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || p == nullptr) {
    (void)cudaGetLastError();
    return false;
  }
  *fn = reinterpret_cast<Fn>(p);
  return true;
}

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    d.ok = lookUp("cuDeviceGet", &d.deviceGet) && lookUp("cuDeviceGetAttribute", &d.deviceGetAttribute) &&
           lookUp("cuGetErrorString", &d.getErrorString) && lookUp("cuMemGetAllocationGranularity", &d.granularity) &&
           lookUp("cuMemCreate", &d.create) && lookUp("cuMemExportToShareableHandle", &d.exportHandle) &&
           lookUp("cuMemImportFromShareableHandle", &d.importHandle) && lookUp("cuMemAddressReserve", &d.reserve) &&
           lookUp("cuMemAddressFree", &d.addressFree) && lookUp("cuMemMap", &d.map) && lookUp("cuMemUnmap", &d.unmap) &&
           lookUp("cuMemSetAccess", &d.setAccess) && lookUp("cuMemRelease", &d.release) &&
           lookUp("cuMemGetAllocationPropertiesFromHandle", &d.propertiesOf);
  });
  return d;
}

const char* errorText(CUresult r) {
  const char* s = nullptr;
  if (driver().getErrorString == nullptr || driver().getErrorString(r, &s) != CUDA_SUCCESS || s == nullptr)
    return "unknown CUDA driver error";
  return s;
}

CUmemAllocationProp deviceProp(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Reserves an address range for `handle`'s `bytes`, aligned to `alignment` (the allocation's
// granularity, which cuMemMap requires of the address), maps it and lets `device` (and, with
// `cpuToo`, the CPU) read and write it. On failure releases what it made, never the handle.
Status mapFor(uint64_t handle, size_t bytes, size_t alignment, int device, VmmRange* out, const char* what,
              bool cpuToo = false) {
  const Driver& d = driver();
  CUdeviceptr ptr = 0;
  CUresult r = d.reserve(&ptr, bytes, alignment, 0, 0);
  if (r != CUDA_SUCCESS)
    return CC_ERROR(Status::kCudaError, "%s: reserving %zu bytes of addresses failed: %s", what, bytes, errorText(r));
  r = d.map(ptr, bytes, 0, handle, 0);
  if (r != CUDA_SUCCESS) {
    (void)d.addressFree(ptr, bytes);
    return CC_ERROR(Status::kCudaError, "%s: mapping %zu bytes failed: %s", what, bytes, errorText(r));
  }
  CUmemAccessDesc access[2] = {};
  access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access[0].location.id = device;
  access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;  // its id is ignored
  access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.setAccess(ptr, bytes, access, cpuToo ? 2 : 1);
  if (r != CUDA_SUCCESS) {
    (void)d.unmap(ptr, bytes);
    (void)d.addressFree(ptr, bytes);
    return CC_ERROR(Status::kCudaError,
                    "%s: letting CUDA device %d reach the memory failed: %s (can it reach the owner's device? "
                    "cudaDeviceCanAccessPeer)",
                    what, device, errorText(r));
  }
  out->ptr = reinterpret_cast<void*>(ptr);
  out->bytes = bytes;
  out->handle = handle;
  return kOk;
}

// A device attribute through the driver; `otherwise` where the driver cannot tell.
int deviceAttribute(int device, CUdevice_attribute attribute, int otherwise) {
  const Driver& d = driver();
  CUdevice dev = 0;
  int value = 0;
  if (!d.ok || d.deviceGet(&dev, device) != CUDA_SUCCESS ||
      d.deviceGetAttribute(&value, attribute, dev) != CUDA_SUCCESS)
    return otherwise;
  return value;
}

// Whether every one of `attributes` is nonzero on `device`, asked once per device and question.
// The devices of a process these answers are kept for.
constexpr int kMaxDevices = 64;

template <int kQuestion>
bool cachedSupport(int device, std::initializer_list<CUdevice_attribute> attributes) {
  static std::atomic<int> cached[kMaxDevices] = {};  // 0 unknown, 1 yes, 2 no
  if (device < 0 || device >= kMaxDevices) return false;
  if (const int c = cached[device].load(std::memory_order_acquire); c != 0) return c == 1;
  bool yes = true;
  for (CUdevice_attribute a : attributes) yes = yes && deviceAttribute(device, a, 0) != 0;
  cached[device].store(yes ? 1 : 2, std::memory_order_release);
  return yes;
}

}  // namespace

bool vmmExportable(int device) {
  return cachedSupport<0>(device, {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                   CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED});
}

// Devices whose host cuMem allocation failed once (vmmHostFailed): not asked again.
std::atomic<bool> hostFailed[kMaxDevices] = {};

bool vmmHostSupported(int device) {
  // Drivers before 12.6 have crashed in cuMemCreate of host NUMA memory (NCCL turns it on from
  // 12.6 for that reason).
  static const bool driverOk = [] {
    int version = 0;
    return cudaDriverGetVersion(&version) == cudaSuccess && version >= 12060;
  }();
  if (!driverOk || device < 0 || device >= kMaxDevices || hostFailed[device].load(std::memory_order_relaxed))
    return false;
  return cachedSupport<1>(device, {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                   CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED});
}

void vmmHostFailed(int device) {
  if (device >= 0 && device < kMaxDevices) hostFailed[device].store(true, std::memory_order_relaxed);
}

Status vmmAllocateHost(int device, size_t bytes, VmmRange* out) {
  const Driver& d = driver();
  if (!d.ok) return CC_ERROR(Status::kCudaError, "the CUDA driver offers no cuMem* entry points");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  // The node nearest the device; 0 where the system has no NUMA (CUDA's rule).
  prop.location.id = std::max(0, deviceAttribute(device, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0));
  size_t granularity = 0;
  CUresult r = d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || granularity == 0)
    return CC_ERROR(Status::kCudaError, "asking CUDA for the granularity of host memory near device %d failed: %s",
                    device, errorText(r));
  const size_t rounded = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  r = d.create(&handle, rounded, &prop, 0);
  if (r != CUDA_SUCCESS)
    return CC_ERROR(Status::kCudaError, "allocating %zu bytes of host memory on NUMA node %d (cuMemCreate) failed: %s",
                    rounded, prop.location.id, errorText(r));
  const Status s = mapFor(handle, rounded, granularity, device, out, "a FIFO in host memory", /*cpuToo=*/true);
  if (!isOk(s)) (void)d.release(handle);
  return s;
}

Status vmmAllocate(int device, size_t bytes, VmmRange* out, int* exportFd) {
  *exportFd = -1;
  const Driver& d = driver();
  if (!d.ok) return CC_ERROR(Status::kCudaError, "the CUDA driver offers no cuMem* entry points");
  const CUmemAllocationProp prop = deviceProp(device);
  size_t granularity = 0;
  CUresult r = d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || granularity == 0)
    return CC_ERROR(Status::kCudaError, "asking CUDA device %d for its allocation granularity failed: %s", device,
                    errorText(r));
  const size_t rounded = (bytes + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  r = d.create(&handle, rounded, &prop, 0);
  if (r != CUDA_SUCCESS)
    return CC_ERROR(Status::kCudaError, "allocating %zu bytes on CUDA device %d (cuMemCreate) failed: %s", rounded,
                    device, errorText(r));
  int fd = -1;
  r = d.exportHandle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) {
    (void)d.release(handle);
    return CC_ERROR(Status::kCudaError, "exporting a cuMem allocation of CUDA device %d as a descriptor failed: %s",
                    device, errorText(r));
  }
  const Status s = mapFor(handle, rounded, granularity, device, out, "a FIFO on this rank's device");
  if (!isOk(s)) {
    close(fd);
    (void)d.release(handle);
    return s;
  }
  *exportFd = fd;
  return kOk;
}

Status vmmImport(int fd, size_t bytes, int device, VmmRange* out) {
  const Driver& d = driver();
  if (!d.ok) return CC_ERROR(Status::kCudaError, "the CUDA driver offers no cuMem* entry points");
  CUmemGenericAllocationHandle handle = 0;
  // The descriptor travels as the handle's value (the driver's convention for POSIX handles).
  const CUresult r = d.importHandle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS)
    return CC_ERROR(Status::kCudaError, "importing a peer process's cuMem allocation failed: %s", errorText(r));
  // Mapped at the granularity of the allocation as its owner made it.
  CUmemAllocationProp prop{};
  size_t granularity = 0;
  const CUresult q = d.propertiesOf(&prop, handle);
  if (q == CUDA_SUCCESS) (void)d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  const Status s = mapFor(handle, bytes, granularity, device, out, "a peer process's FIFO");
  if (!isOk(s)) (void)d.release(handle);
  return s;
}

void vmmRelease(VmmRange* range) {
  if (range->ptr == nullptr) return;
  const Driver& d = driver();
  const auto ptr = reinterpret_cast<CUdeviceptr>(range->ptr);
  (void)d.unmap(ptr, range->bytes);
  (void)d.addressFree(ptr, range->bytes);
  (void)d.release(range->handle);
  *range = VmmRange{};
}

}  // namespace collcomm::detail
