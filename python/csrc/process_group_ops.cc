// ProcessGroupCollcomm's operations: each checks its arguments on the caller's thread, then queues
// a Task that the group's worker runs (process_group_collcomm.cc), or the caller's thread on a
// GPU's stream (gpu_path.h). Every tensor a collcomm call reads or writes is held by the Task (the
// shared_ptrs its lambdas capture), never by a local of `issue`: in a coalesced batch the calls run
// at the batch's ccGroupEnd, after `issue` has returned.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "group_scope.h"
#include "process_group_collcomm.h"
#include "reduction.h"
#include "tensor_args.h"

namespace collcomm_torch {
namespace {

// One Task made of several, run in order (the coalesced variants of one operation).
Task sequence(std::vector<Task> parts) {
  auto shared = std::make_shared<std::vector<Task>>(std::move(parts));
  return Task{[shared](const Target& on) {
                for (auto& p : *shared) p.issue(on);
              },
              [shared] {
                for (auto& p : *shared) p.finish();
              }};
}

}  // namespace

Task ProcessGroupCollcomm::allreduceTask(const at::Tensor& tensor, const c10d::ReduceOp& op) {
  checkReduction(tensor, op);
  auto buffer = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  return Task{[this, tensor, op, buffer, reduction](const Target& on) {
                *buffer = dense(tensor);
                *reduction = makeReduction(on.comm, tensor, op);
                check(on,
                      ccAllReduce(buffer->data_ptr(), buffer->data_ptr(), buffer->numel(), (*reduction)->type,
                                  (*reduction)->op, on.comm, on.stream),
                      "all_reduce");
              },
              [tensor, buffer, reduction] {
                writeBack(tensor, *buffer);
                reduction->reset();
              }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allreduce(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceOptions& opts) {
  checkSingle(tensors, "all_reduce");
  TORCH_CHECK(!opts.sparseIndices.has_value(), "collcomm all_reduce: sparse tensors are not supported");
  return enqueue(c10d::OpType::ALLREDUCE, tensors[0].device(), tensors, allreduceTask(tensors[0], opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                         const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "collcomm all_reduce_coalesced: no tensors");
  const at::Device device = checkDevice(tensors[0], "all_reduce_coalesced");
  std::vector<Task> parts;
  for (auto& t : tensors) {
    checkTensor(t, device, "all_reduce_coalesced");
    parts.push_back(allreduceTask(t, opts.reduceOp));
  }
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, device, tensors, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::broadcast(std::vector<at::Tensor>& tensors,
                                                               const c10d::BroadcastOptions& opts) {
  checkSingle(tensors, "broadcast");
  checkRoot(opts.rootRank, getSize(), "broadcast");
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, tensor.device(), tensors,
                 Task{[this, tensor, buffer, root](const Target& on) {
                        *buffer = dense(tensor);
                        check(on,
                              ccBroadcast(buffer->data_ptr(), buffer->data_ptr(), bytesOf(*buffer), ccUint8, root,
                                          on.comm, on.stream),
                              "broadcast");
                      },
                      [tensor, buffer] { writeBack(tensor, *buffer); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::ReduceOptions& opts) {
  checkSingle(tensors, "reduce");
  checkRoot(opts.rootRank, getSize(), "reduce");
  at::Tensor tensor = tensors[0];
  checkReduction(tensor, opts.reduceOp);
  auto buffer = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  const int root = static_cast<int>(opts.rootRank);
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::REDUCE, tensor.device(), tensors,
                 Task{[this, tensor, buffer, reduction, root, op](const Target& on) {
                        *buffer = dense(tensor);
                        *reduction = makeReduction(on.comm, tensor, op);
                        check(on,
                              ccReduce(buffer->data_ptr(), buffer->data_ptr(), buffer->numel(), (*reduction)->type,
                                       (*reduction)->op, root, on.comm, on.stream),
                              "reduce");
                      },
                      [this, tensor, buffer, reduction, root] {
                        // Only the root's tensor holds the result; the others keep their input.
                        if (getRank() == root) writeBack(tensor, *buffer);
                        reduction->reset();
                      }});
}

Task ProcessGroupCollcomm::allgatherBaseTask(const at::Tensor& output, const at::Tensor& input) {
  checkTensor(output, checkDevice(input, "all_gather_into_tensor"), "all_gather_into_tensor");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm all_gather_into_tensor: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "collcomm all_gather_into_tensor: output has ",
              output.numel(), " elements, expected world size (", getSize(), ") x input (", input.numel(), ")");
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  return Task{[this, output, input, in, out](const Target& on) {
                *in = dense(input);
                *out = denseOut(output);
                check(on, ccAllGather(in->data_ptr(), out->data_ptr(), bytesOf(*in), ccUint8, on.comm, on.stream),
                      "all_gather_into_tensor");
              },
              [output, out] { writeBack(output, *out); }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::AllgatherOptions&) {
  return enqueue(c10d::OpType::_ALLGATHER_BASE, input.device(), {output}, allgatherBaseTask(output, input));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                     std::vector<at::Tensor>& inputs,
                                                                                     const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputs.size() == inputs.size(), "collcomm allgather_into_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  TORCH_CHECK(!inputs.empty(), "collcomm allgather_into_tensor_coalesced: no tensors");
  std::vector<Task> parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i], inputs[0].device(), "allgather_into_tensor_coalesced");
    parts.push_back(allgatherBaseTask(outputs[i], inputs[i]));
  }
  return enqueue(c10d::OpType::COALESCED, inputs[0].device(), outputs, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                               std::vector<at::Tensor>& inputs,
                                                               const c10d::AllgatherOptions&) {
  checkSingle(inputs, "all_gather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "collcomm all_gather: expects one output list of world size (", getSize(), ") tensors");
  at::Tensor input = inputs[0];
  std::vector<at::Tensor> outs = outputs[0];
  for (auto& o : outs) {
    checkTensor(o, input.device(), "all_gather");
    TORCH_CHECK(o.scalar_type() == input.scalar_type(), "collcomm all_gather: output type ", o.scalar_type(),
                " differs from input type ", input.scalar_type());
  }
  TORCH_CHECK(outs[getRank()].numel() == input.numel(), "collcomm all_gather: this rank's output has ",
              outs[getRank()].numel(), " elements, its input ", input.numel());
  const int rank = getRank();
  const int size = getSize();
  if (sameShapes(outs, input)) {
    // Equal sizes: one ccAllGather into a flat buffer, then a copy into each output.
    auto flat = std::make_shared<at::Tensor>();
    auto in = std::make_shared<at::Tensor>();
    return enqueue(
        c10d::OpType::ALLGATHER, input.device(), outs,
        Task{[this, input, flat, in, size](const Target& on) {
               *in = dense(input);
               *flat = at::empty({size * input.numel()}, input.options());
               check(on, ccAllGather(in->data_ptr(), flat->data_ptr(), bytesOf(*in), ccUint8, on.comm, on.stream),
                     "all_gather");
             },
             [outs, flat, input] {
               for (size_t r = 0; r < outs.size(); ++r)
                 outs[r].copy_(flat->narrow(0, r * input.numel(), input.numel()).view_as(outs[r]));
             }});
  }
  // Uneven sizes (each rank's output says what that rank sends): grouped send/recv.
  auto in = std::make_shared<at::Tensor>();
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  return enqueue(c10d::OpType::ALLGATHER, input.device(), outs,
                 Task{[this, input, outs, in, bufs, rank, size](const Target& on) {
                        *in = dense(input);
                        for (auto& o : outs) bufs->push_back(denseOut(o));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          check(on, ccSend(in->data_ptr(), bytesOf(*in), ccUint8, p, on.comm, on.stream),
                                "all_gather (send)");
                          check(on, ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, on.comm, on.stream),
                                "all_gather (recv)");
                        }
                        check(on, group.end(), "all_gather (uneven)");
                        (*bufs)[rank].copy_(in->view_as((*bufs)[rank]));
                      },
                      [outs, bufs] {
                        for (size_t r = 0; r < outs.size(); ++r) writeBack(outs[r], (*bufs)[r]);
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::GatherOptions& opts) {
  checkSingle(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const int rank = getRank();
  const int size = getSize();
  checkRoot(root, size, "gather");
  std::vector<at::Tensor> outs = rootList(outputs, inputs[0], rank, root, size, "gather", "output");
  // Point to point, so each rank may send a different number of elements (the root's outputs say how many).
  at::Tensor input = inputs[0];
  auto in = std::make_shared<at::Tensor>();
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  return enqueue(
      c10d::OpType::GATHER, input.device(), outs,
      Task{[this, input, outs, in, bufs, rank, size, root](const Target& on) {
             *in = dense(input);
             if (rank != root) {
               check(on, ccSend(in->data_ptr(), bytesOf(*in), ccUint8, root, on.comm, on.stream), "gather (send)");
               return;
             }
             for (auto& o : outs) bufs->push_back(denseOut(o));
             GroupScope group;
             for (int p = 0; p < size; ++p) {
               if (p != rank)
                 check(on, ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, on.comm, on.stream),
                       "gather (recv)");
             }
             check(on, group.end(), "gather");
             (*bufs)[rank].copy_(in->view_as((*bufs)[rank]));
           },
           [outs, bufs] {
             for (size_t r = 0; r < bufs->size(); ++r) writeBack(outs[r], (*bufs)[r]);
           }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::scatter(std::vector<at::Tensor>& outputs,
                                                             std::vector<std::vector<at::Tensor>>& inputs,
                                                             const c10d::ScatterOptions& opts) {
  checkSingle(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const int rank = getRank();
  const int size = getSize();
  checkRoot(root, size, "scatter");
  std::vector<at::Tensor> ins = rootList(inputs, outputs[0], rank, root, size, "scatter", "input");
  at::Tensor output = outputs[0];
  auto out = std::make_shared<at::Tensor>();
  auto dins = std::make_shared<std::vector<at::Tensor>>();  // held by the Task (see the top of this file)
  return enqueue(c10d::OpType::SCATTER, output.device(), outputs,
                 Task{[this, output, ins, out, dins, rank, size, root](const Target& on) {
                        *out = denseOut(output);
                        if (rank != root) {
                          check(on, ccRecv(out->data_ptr(), bytesOf(*out), ccUint8, root, on.comm, on.stream),
                                "scatter (recv)");
                          return;
                        }
                        for (auto& i : ins) dins->push_back(dense(i));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p != rank)
                            check(on,
                                  ccSend((*dins)[p].data_ptr(), bytesOf((*dins)[p]), ccUint8, p, on.comm, on.stream),
                                  "scatter (send)");
                        }
                        check(on, group.end(), "scatter");
                        out->copy_((*dins)[rank].view_as(*out));
                      },
                      [output, out] { writeBack(output, *out); }});
}

Task ProcessGroupCollcomm::reduceScatterBaseTask(const at::Tensor& output, const at::Tensor& input,
                                                 const c10d::ReduceOp& op) {
  checkTensor(output, checkDevice(input, "reduce_scatter_tensor"), "reduce_scatter_tensor");
  checkReduction(input, op);
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm reduce_scatter_tensor: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "collcomm reduce_scatter_tensor: input has ", input.numel(),
              " elements, expected world size (", getSize(), ") x output (", output.numel(), ")");
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  return Task{[this, output, input, op, in, out, reduction](const Target& on) {
                *in = dense(input);
                *out = denseOut(output);
                *reduction = makeReduction(on.comm, input, op);
                check(on,
                      ccReduceScatter(in->data_ptr(), out->data_ptr(), out->numel(), (*reduction)->type,
                                      (*reduction)->op, on.comm, on.stream),
                      "reduce_scatter_tensor");
              },
              [output, out, reduction] {
                writeBack(output, *out);
                reduction->reset();
              }};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                          const c10d::ReduceScatterOptions& opts) {
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, input.device(), {output},
                 reduceScatterBaseTask(output, input, opts.reduceOp));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "collcomm reduce_scatter_tensor_coalesced: ", outputs.size(),
              " outputs for ", inputs.size(), " inputs");
  TORCH_CHECK(!inputs.empty(), "collcomm reduce_scatter_tensor_coalesced: no tensors");
  std::vector<Task> parts;
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i], inputs[0].device(), "reduce_scatter_tensor_coalesced");
    parts.push_back(reduceScatterBaseTask(outputs[i], inputs[i], opts.reduceOp));
  }
  return enqueue(c10d::OpType::COALESCED, inputs[0].device(), outputs, sequence(std::move(parts)));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                                    const c10d::ReduceScatterOptions& opts) {
  checkSingle(outputs, "reduce_scatter");
  const int size = getSize();
  const int rank = getRank();
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size,
              "collcomm reduce_scatter: expects one input list of world size (", size, ") tensors");
  at::Tensor output = outputs[0];
  std::vector<at::Tensor> ins = inputs[0];
  for (auto& i : ins) {
    checkTensor(i, output.device(), "reduce_scatter");
    TORCH_CHECK(i.scalar_type() == output.scalar_type(), "collcomm reduce_scatter: input type ", i.scalar_type(),
                " differs from output type ", output.scalar_type());
  }
  checkReduction(output, opts.reduceOp);
  TORCH_CHECK(ins[rank].numel() == output.numel(), "collcomm reduce_scatter: input ", rank, " has ", ins[rank].numel(),
              " elements, this rank's output ", output.numel());
  c10d::ReduceOp op = opts.reduceOp;
  auto out = std::make_shared<at::Tensor>();
  auto reduction = std::make_shared<std::shared_ptr<Reduction>>();
  auto dins = std::make_shared<std::vector<at::Tensor>>();  // held by the Task (see the top of this file)
  if (sameShapes(ins, output)) {
    // Equal sizes: the list laid end to end is ccReduceScatter's input.
    return enqueue(c10d::OpType::REDUCE_SCATTER, output.device(), outputs,
                   Task{[this, output, ins, op, out, reduction, dins](const Target& on) {
                          std::vector<at::Tensor> flat;
                          for (auto& i : ins) flat.push_back(i.reshape({-1}));
                          const at::Tensor& in = dins->emplace_back(at::cat(flat));
                          *out = denseOut(output);
                          *reduction = makeReduction(on.comm, output, op);
                          check(on,
                                ccReduceScatter(in.data_ptr(), out->data_ptr(), out->numel(), (*reduction)->type,
                                                (*reduction)->op, on.comm, on.stream),
                                "reduce_scatter");
                        },
                        [output, out, reduction] {
                          writeBack(output, *out);
                          reduction->reset();
                        }});
  }
  // Uneven sizes: one ccReduce per rank, of that rank's part, to that rank.
  return enqueue(c10d::OpType::REDUCE_SCATTER, output.device(), outputs,
                 Task{[this, output, ins, op, out, reduction, dins, rank, size](const Target& on) {
                        *out = denseOut(output);
                        *reduction = makeReduction(on.comm, output, op);
                        for (int p = 0; p < size; ++p) {
                          const at::Tensor in = dins->emplace_back(dense(ins[p]));
                          void* recv = p == rank ? out->data_ptr() : in.data_ptr();
                          check(on,
                                ccReduce(in.data_ptr(), recv, in.numel(), (*reduction)->type, (*reduction)->op, p,
                                         on.comm, on.stream),
                                "reduce_scatter (uneven)");
                        }
                      },
                      [output, out, reduction] {
                        writeBack(output, *out);
                        reduction->reset();
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                   std::vector<int64_t>& outputSplits,
                                                                   std::vector<int64_t>& inputSplits,
                                                                   const c10d::AllToAllOptions&) {
  checkTensor(output, checkDevice(input, "all_to_all_single"), "all_to_all_single");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "collcomm all_to_all_single: output type ",
              output.scalar_type(), " differs from input type ", input.scalar_type());
  const int size = getSize();
  const int rank = getRank();
  auto in = std::make_shared<at::Tensor>();
  auto out = std::make_shared<at::Tensor>();
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % size == 0, "collcomm all_to_all_single: input (",
                input.numel(), ") and output (", output.numel(), ") must have the same size, divisible by ", size);
    return enqueue(
        c10d::OpType::ALLTOALL_BASE, input.device(), {output},
        Task{[this, input, output, in, out, size](const Target& on) {
               *in = dense(input);
               *out = denseOut(output);
               check(on, ccAlltoAll(in->data_ptr(), out->data_ptr(), bytesOf(*in) / size, ccUint8, on.comm, on.stream),
                     "all_to_all_single");
             },
             [output, out] { writeBack(output, *out); }});
  }
  // Splits along dim 0, in rows of the rest of the shape: grouped send/recv, as NCCL users do.
  auto splitsOf = [&](const std::vector<int64_t>& given, const at::Tensor& t, const char* which) {
    std::vector<int64_t> rows = given;
    if (rows.empty()) {
      TORCH_CHECK(t.dim() > 0 && t.size(0) % size == 0, "collcomm all_to_all_single: ", which, " dim 0 (",
                  t.dim() > 0 ? t.size(0) : 0, ") is not divisible by ", size);
      rows.assign(size, t.size(0) / size);
    }
    TORCH_CHECK(static_cast<int>(rows.size()) == size, "collcomm all_to_all_single: ", rows.size(), " ", which,
                " split sizes for ", size, " ranks");
    int64_t total = 0;
    for (int64_t r : rows) {
      TORCH_CHECK(r >= 0, "collcomm all_to_all_single: negative split size ", r);
      total += r;
    }
    TORCH_CHECK(t.dim() > 0 && total == t.size(0), "collcomm all_to_all_single: ", which, " split sizes add up to ",
                total, ", dim 0 is ", t.dim() > 0 ? t.size(0) : 0);
    return rows;
  };
  std::vector<int64_t> sendRows = splitsOf(inputSplits, input, "input");
  std::vector<int64_t> recvRows = splitsOf(outputSplits, output, "output");
  return enqueue(c10d::OpType::ALLTOALL_BASE, input.device(), {output},
                 Task{[this, input, output, in, out, sendRows, recvRows, rank, size](const Target& on) {
                        *in = dense(input);
                        *out = denseOut(output);
                        const size_t inRow = input.size(0) > 0 ? bytesOf(*in) / input.size(0) : 0;
                        const size_t outRow = output.size(0) > 0 ? bytesOf(*out) / output.size(0) : 0;
                        auto* src = static_cast<char*>(in->data_ptr());
                        auto* dst = static_cast<char*>(out->data_ptr());
                        std::vector<size_t> sendOff(size), recvOff(size);
                        for (int p = 1; p < size; ++p) {
                          sendOff[p] = sendOff[p - 1] + sendRows[p - 1] * inRow;
                          recvOff[p] = recvOff[p - 1] + recvRows[p - 1] * outRow;
                        }
                        TORCH_CHECK(sendRows[rank] * inRow == recvRows[rank] * outRow,
                                    "collcomm all_to_all_single: this rank sends itself ", sendRows[rank] * inRow,
                                    " bytes but expects ", recvRows[rank] * outRow);
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          if (sendRows[p] > 0)
                            check(on, ccSend(src + sendOff[p], sendRows[p] * inRow, ccUint8, p, on.comm, on.stream),
                                  "all_to_all_single (send)");
                          if (recvRows[p] > 0)
                            check(on, ccRecv(dst + recvOff[p], recvRows[p] * outRow, ccUint8, p, on.comm, on.stream),
                                  "all_to_all_single (recv)");
                        }
                        check(on, group.end(), "all_to_all_single");
                        // This rank's own rows: a tensor copy, so that it also runs on a GPU's stream.
                        const auto ownBytes = static_cast<int64_t>(sendRows[rank] * inRow);
                        out->reshape({-1})
                            .view(at::kByte)
                            .narrow(0, static_cast<int64_t>(recvOff[rank]), ownBytes)
                            .copy_(in->reshape({-1}).view(at::kByte).narrow(0, static_cast<int64_t>(sendOff[rank]),
                                                                            ownBytes));
                      },
                      [output, out] { writeBack(output, *out); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::alltoall(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllToAllOptions&) {
  const int size = getSize();
  const int rank = getRank();
  TORCH_CHECK(static_cast<int>(outputs.size()) == size && static_cast<int>(inputs.size()) == size,
              "collcomm all_to_all: expects world size (", size, ") inputs and outputs");
  const at::Device device = checkDevice(inputs[0], "all_to_all");
  for (int p = 0; p < size; ++p) {
    checkTensor(inputs[p], device, "all_to_all");
    checkTensor(outputs[p], device, "all_to_all");
    TORCH_CHECK(inputs[p].scalar_type() == outputs[p].scalar_type(), "collcomm all_to_all: types differ");
  }
  TORCH_CHECK(bytesOf(inputs[rank]) == bytesOf(outputs[rank]),
              "collcomm all_to_all: this rank's own input and output "
              "differ in size");
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> outs = outputs;
  auto bufs = std::make_shared<std::vector<at::Tensor>>();
  auto kept = std::make_shared<std::vector<at::Tensor>>();  // held by the Task (see the top of this file)
  return enqueue(c10d::OpType::ALLTOALL, device, outputs,
                 Task{[this, ins, outs, bufs, kept, rank, size](const Target& on) {
                        std::vector<at::Tensor>& dins = *kept;
                        for (auto& i : ins) dins.push_back(dense(i));
                        for (auto& o : outs) bufs->push_back(denseOut(o));
                        GroupScope group;
                        for (int p = 0; p < size; ++p) {
                          if (p == rank) continue;
                          if (bytesOf(dins[p]) > 0)
                            check(on, ccSend(dins[p].data_ptr(), bytesOf(dins[p]), ccUint8, p, on.comm, on.stream),
                                  "all_to_all (send)");
                          if (bytesOf((*bufs)[p]) > 0)
                            check(on,
                                  ccRecv((*bufs)[p].data_ptr(), bytesOf((*bufs)[p]), ccUint8, p, on.comm, on.stream),
                                  "all_to_all (recv)");
                        }
                        check(on, group.end(), "all_to_all");
                        (*bufs)[rank].copy_(dins[rank].view_as((*bufs)[rank]));
                      },
                      [outs, bufs] {
                        for (size_t r = 0; r < outs.size(); ++r) writeBack(outs[r], (*bufs)[r]);
                      }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::send(std::vector<at::Tensor>& tensors, int dstRank, int) {
  checkSingle(tensors, "send");
  TORCH_CHECK(dstRank >= 0 && dstRank < getSize() && dstRank != getRank(), "collcomm send: destination ", dstRank,
              " is not another rank of this group of ", getSize());
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  return enqueue(c10d::OpType::SEND, tensor.device(), tensors,
                 Task{[this, tensor, buffer, dstRank](const Target& on) {
                        *buffer = dense(tensor);
                        check(on, ccSend(buffer->data_ptr(), bytesOf(*buffer), ccUint8, dstRank, on.comm, on.stream),
                              "send");
                      },
                      [buffer] { buffer->reset(); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::recv(std::vector<at::Tensor>& tensors, int srcRank, int) {
  checkSingle(tensors, "recv");
  TORCH_CHECK(srcRank >= 0 && srcRank < getSize() && srcRank != getRank(), "collcomm recv: source ", srcRank,
              " is not another rank of this group of ", getSize());
  at::Tensor tensor = tensors[0];
  auto buffer = std::make_shared<at::Tensor>();
  return enqueue(c10d::OpType::RECV, tensor.device(), tensors,
                 Task{[this, tensor, buffer, srcRank](const Target& on) {
                        *buffer = denseOut(tensor);
                        check(on, ccRecv(buffer->data_ptr(), bytesOf(*buffer), ccUint8, srcRank, on.comm, on.stream),
                              "recv");
                      },
                      [tensor, buffer] { writeBack(tensor, *buffer); }});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCollcomm::barrier(const c10d::BarrierOptions&) {
  // A one-byte all-reduce queued behind everything issued before: waiting on it waits for those too.
  auto token = std::make_shared<at::Tensor>(at::zeros({1}, at::kByte));
  return enqueue(c10d::OpType::BARRIER, at::Device(at::kCPU), {},
                 Task{[this, token](const Target& on) {
                        check(on,
                              ccAllReduce(token->data_ptr(), token->data_ptr(), 1, ccUint8, ccMax, on.comm, on.stream),
                              "barrier");
                      },
                      {}});
}

}  // namespace collcomm_torch
