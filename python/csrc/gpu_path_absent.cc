// GpuPath where this build has no CUDA (torch without it, or no CUDA toolkit at build time): CUDA
// tensors are refused with a sentence at the call.
#include <c10/util/Exception.h>

#include "gpu_path.h"

namespace collcomm_torch {
namespace {

[[noreturn]] void refuse() {
  TORCH_CHECK(false,
              "collcomm: this collcomm_torch was built without CUDA (its torch had no CUDA, or no CUDA toolkit "
              "was found when it was built), so it runs CPU tensors only");
}

}  // namespace

struct GpuPath::Impl {};

bool GpuPath::built() { return false; }
GpuPath::GpuPath(c10::intrusive_ptr<c10d::Store>, int, int, std::chrono::milliseconds, std::string) {}
GpuPath::~GpuPath() = default;
void GpuPath::connect(at::Device) { refuse(); }
c10::intrusive_ptr<c10d::Work> GpuPath::newWork(at::Device, c10d::OpType, std::vector<at::Tensor>) { refuse(); }
void GpuPath::launch(at::Device, std::vector<Task>, bool, const TaskRunner&,
                     const std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  refuse();
}
void GpuPath::split(GpuPath*, int, int) {}
void GpuPath::abort() {}
void GpuPath::shutdown() {}

}  // namespace collcomm_torch
