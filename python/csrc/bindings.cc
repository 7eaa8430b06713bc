// The Python module collcomm_torch._C: ProcessGroupCollcomm as a subclass of torch's Backend, so
// torch.distributed can hold it like its own backends.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group_collcomm.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "collcomm's c10d backend (CPU tensors, and CUDA tensors where built with CUDA)";
  py::class_<collcomm_torch::ProcessGroupCollcomm, c10d::Backend,
             c10::intrusive_ptr<collcomm_torch::ProcessGroupCollcomm>>(m, "ProcessGroupCollcomm")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds, std::string>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("name"),
           py::call_guard<py::gil_scoped_release>())
      // new_group on a group bound to a device (init_process_group(device_id=...)) asks the ranks
      // outside the new group to take part in a split, as ncclCommSplit needs; collcomm makes a new
      // group's communicators from its store instead, so there is nothing to take part in.
      .def(
          "perform_nocolor_split", [](collcomm_torch::ProcessGroupCollcomm&, at::Device) {}, py::arg("device"));
  m.def("has_cuda", &collcomm_torch::GpuPath::built,
        "Whether this build runs CUDA tensors (torch and the CUDA toolkit had CUDA when it was built).");
  m.def("version", [] {
    int v = 0;
    (void)ccGetVersion(&v);
    return v;
  });
}
