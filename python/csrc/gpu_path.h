// How a process group runs CUDA tensors: a GPU communicator per device, made on the device's first
// operation (or by eagerConnectSingleDevice), and a stream of the group's there. An operation is
// enqueued from the caller's thread, NCCL's way: the group's stream waits for the caller's current
// stream, the Task's copies and collcomm calls run on it, and the Work's wait() makes the caller's
// stream wait for the end; nothing blocks the host. A watchdog thread completes each Work when its
// stream has run it, or fails it with the communicator's sentence (a dead peer, a timeout), and
// keeps the Task, and so every tensor it holds, until then.
//
// Compiled with CUDA where torch and the toolkit have it (gpu_path.cc); else gpu_path_absent.cc
// refuses CUDA tensors with a sentence.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "task.h"

namespace collcomm_torch {

// Runs a batch of Tasks against a Target (ProcessGroupCollcomm::runTasks): `grouped` puts them
// between ccGroupStart and ccGroupEnd.
using TaskRunner = std::function<void(std::vector<Task>& tasks, bool grouped, const Target& on)>;

class GpuPath {
 public:
  // Whether this build runs CUDA tensors at all.
  static bool built();

  // `store` is the group's (torch prefixes it per group); each device's communicator takes the next
  // key there, so every rank must reach its first CUDA operation of each device in the same order,
  // as torch already requires of a group's operations.
  GpuPath(c10::intrusive_ptr<c10d::Store> store, int rank, int size, std::chrono::milliseconds timeout,
          std::string name);
  ~GpuPath();
  GpuPath(const GpuPath&) = delete;
  GpuPath& operator=(const GpuPath&) = delete;

  // Makes the communicator of `device` now (torch's init_process_group(device_id=...)).
  void connect(at::Device device);

  // A Work for an operation on `device` that launch() will run; its future completes with
  // `outputs` on the group's stream (a CUDA future: consumers wait for that stream, not the host).
  c10::intrusive_ptr<c10d::Work> newWork(at::Device device, c10d::OpType type, std::vector<at::Tensor> outputs);

  // Runs `tasks` on `device`'s communicator and stream, and ties every Work of `works` (each made
  // by newWork for this device) to their end. A failure while enqueueing fails those Works and is
  // rethrown here.
  void launch(at::Device device, std::vector<Task> tasks, bool grouped, const TaskRunner& run,
              const std::vector<c10::intrusive_ptr<c10d::Work>>& works);

  // Splits every communicator this group has made (ccCommSplit, color and key as the host
  // communicator's split); `child` (null on a rank outside every subgroup) takes the new ones over.
  void split(GpuPath* child, int color, int key);

  // Stops what runs (ccCommRevoke); shutdown() then frees the communicators.
  void abort();
  // Waits for what was enqueued (each kernel has the communicator's deadline), then destroys the
  // communicators, or aborts those that failed.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace collcomm_torch
