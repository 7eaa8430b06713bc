// The reduction collcomm runs for torch's ReduceOp on a tensor: the element type and op, and a
// PreMulSum made for the call where torch asks for one.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "collcomm.h"

namespace collcomm_torch {

// A reduction as collcomm runs it: a built-in op, or a PreMulSum made for this call (destroyed
// with the holder, after the batch it ran in has finished).
struct Reduction {
  ccDataType_t type = ccFloat32;
  ccRedOp_t op = ccSum;
  ccComm_t comm = nullptr;
  bool owned = false;
  at::Tensor factor;  // a PreMulSum's factor in device memory (CUDA tensors), read when the kernel runs
  Reduction() = default;
  Reduction(const Reduction&) = delete;
  Reduction& operator=(const Reduction&) = delete;
  ~Reduction() {
    if (owned) (void)ccRedOpDestroy(op, comm);
  }
};

// Checks that collcomm can reduce `t` with `op`; throws (RuntimeError) where it cannot. Runs on the
// caller's thread, so bad arguments fail at the call.
void checkReduction(const at::Tensor& t, const c10d::ReduceOp& op);

// The reduction for `t` and `op` on `comm` (checked by checkReduction first).
std::shared_ptr<Reduction> makeReduction(ccComm_t comm, const at::Tensor& t, const c10d::ReduceOp& op);

}  // namespace collcomm_torch
