// What the operations check and adapt of torch's tensors (tensor_args.h).
#include "tensor_args.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace collcomm_torch {

at::Device checkDevice(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "collcomm ", what,
              ": only CPU and CUDA tensors are supported; got a tensor on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "collcomm ", what, ": only dense (strided) tensors are supported");
  return t.device();
}

void checkTensor(const at::Tensor& t, at::Device device, const char* what) {
  TORCH_CHECK(t.device() == device, "collcomm ", what, ": every tensor of one call must be on one device; got ",
              t.device(), " and ", device);
  TORCH_CHECK(t.layout() == at::kStrided, "collcomm ", what, ": only dense (strided) tensors are supported");
}

void checkSingle(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "collcomm ", what, ": expects one tensor per call, got ", tensors.size());
  checkDevice(tensors[0], what);
}

void checkRoot(int64_t root, int size, const char* what) {
  TORCH_CHECK(root >= 0 && root < size, "collcomm ", what, ": root ", root, " is not a rank of this group of ", size);
}

size_t bytesOf(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

at::Tensor dense(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

at::Tensor denseOut(const at::Tensor& t) {
  return t.is_contiguous() ? t : at::empty_like(t, at::MemoryFormat::Contiguous);
}

void writeBack(const at::Tensor& to, const at::Tensor& from) {
  if (!to.is_same(from)) to.copy_(from.view_as(to));
}

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
    checkTensor(t, own.device(), what);
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

}  // namespace collcomm_torch
