// What the operations check and adapt of torch's tensors: each check throws (RuntimeError, a
// sentence naming the operation `what`) on the caller's thread, so bad arguments fail at the call.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collcomm_torch {

// A dense CPU or CUDA tensor; returns its device, which the call's other tensors must share.
at::Device checkDevice(const at::Tensor& t, const char* what);
// A dense tensor on `device` (the device of the call's first tensor).
void checkTensor(const at::Tensor& t, at::Device device, const char* what);
// One tensor, checked by checkDevice.
void checkSingle(const std::vector<at::Tensor>& tensors, const char* what);
void checkRoot(int64_t root, int size, const char* what);

size_t bytesOf(const at::Tensor& t);

// A contiguous tensor with t's values: t itself when it is contiguous, else a copy (made on the
// worker, or on the group's stream for CUDA tensors, so it sees what earlier operations wrote).
at::Tensor dense(const at::Tensor& t);

// A contiguous tensor to write t's result into: t itself when it is contiguous, else a new one
// (writeBack then copies it into t).
at::Tensor denseOut(const at::Tensor& t);

// Copies `from` into `to` when they are different tensors (a contiguous stand-in for `to`).
void writeBack(const at::Tensor& to, const at::Tensor& from);

// The root's list of world-size tensors for gather (its outputs) or scatter (its inputs), checked
// against the root's own tensor `own`; empty on the other ranks, which must pass none.
std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& own, int rank,
                                 int root, int size, const char* what, const char* kind);

// Whether every tensor of `ts` has like's element count and type.
bool sameShapes(const std::vector<at::Tensor>& ts, const at::Tensor& like);

}  // namespace collcomm_torch
