// Which of a group's collectives one ring launch carries together (the CUDA executor's runGroup;
// docs/gpu.md, "One launch per group"). CUDA-free, so that the rule is tested on any host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/dtypes.h"
#include "device/executor.h"

namespace collcomm::detail {

// Whether the CUDA executor runs c in its ring kernels: every collective but Direct, the one-shot
// AllReduce beyond two ranks and the tree (each of which has a kernel of its own).
inline bool runsOnRingKernels(const ExecColl& c, int nranks) {
  if (c.algo == Algorithm::kDirect) return false;
  if (c.algo == Algorithm::kOneShot && nranks > 2) return false;
  if (c.algo == Algorithm::kTree && nranks > 1) return false;
  return true;
}

// What a collective's buffers span on this rank, as far as works of one launch may depend on each
// other: the bytes it may read (its input, and a PreMulSum's device scalar) and write (its output).
// A rank's root role is not looked at: the spans may be larger than what it touches, never smaller.
struct WorkSpans {
  uintptr_t in, inEnd, out, outEnd, scalar, scalarEnd;
};

inline WorkSpans spansOf(const ExecColl& c, int nranks) {
  const size_t bytes = c.count * dtypeSize(c.dtype), all = bytes * static_cast<size_t>(nranks);
  const size_t inBytes = c.kind == CollKind::kReduceScatter ? all : bytes;
  const size_t outBytes = c.kind == CollKind::kAllGather ? all : bytes;
  const auto in = reinterpret_cast<uintptr_t>(c.sendbuff), out = reinterpret_cast<uintptr_t>(c.recvbuff);
  const auto scalar = reinterpret_cast<uintptr_t>(c.op.scalarAddress);
  return WorkSpans{in, in + inBytes, out, out + outBytes, scalar, scalar != 0 ? scalar + dtypeSize(c.dtype) : 0};
}

// Whether `later` reads what `earlier` writes, or writes what `earlier` reads or writes. The blocks
// of one launch run its works each at its own pace (block c may start work i + 1 while block 0
// still writes work i), so such a pair must not share a launch: separate launches keep the
// stream's order, as the group's order asks.
inline bool dependsOn(const WorkSpans& later, const WorkSpans& earlier) {
  auto overlap = [](uintptr_t a, uintptr_t aEnd, uintptr_t b, uintptr_t bEnd) { return a < bEnd && b < aEnd; };
  return overlap(later.in, later.inEnd, earlier.out, earlier.outEnd) ||
         overlap(later.scalar, later.scalarEnd, earlier.out, earlier.outEnd) ||
         overlap(later.out, later.outEnd, earlier.in, earlier.inEnd) ||
         overlap(later.out, later.outEnd, earlier.scalar, earlier.scalarEnd) ||
         overlap(later.out, later.outEnd, earlier.out, earlier.outEnd);
}

// Whether c runs in the same ring kernel instantiation as `first` (which runs on the ring kernels).
inline bool joins(const ExecColl& c, const ExecColl& first, int nranks) {
  return runsOnRingKernels(c, nranks) && c.kind == first.kind && c.dtype == first.dtype && c.proto == first.proto &&
         c.algo == first.algo && (!collReduces(c.kind) || c.op.kind == first.op.kind);
}

// The end of the run of collectives from colls[begin] (of n) that one ring launch carries: at most
// maxWorks, each on the ring kernels with the same kind, type, protocol and algorithm as the first,
// and the same reduction kind where the kind reduces (one kernel instantiation; buffers, counts,
// roots, reduction arguments and channel counts may differ), none depending on an earlier one of
// the run (dependsOn). At least begin + 1. Ranks may cut a group differently (each channel's
// FIFO still carries the works in the group's order).
inline size_t ringGroupEnd(const ExecColl* colls, size_t begin, size_t n, int nranks, size_t maxWorks) {
  const ExecColl& first = colls[begin];
  if (!runsOnRingKernels(first, nranks)) return begin + 1;
  const size_t last = n - begin < maxWorks ? n : begin + maxWorks;  // the run ends here at the latest
  size_t end = begin + 1;
  for (; end < last && joins(colls[end], first, nranks); ++end) {
    const WorkSpans spans = spansOf(colls[end], nranks);
    bool independent = true;
    for (size_t i = begin; i < end && independent; ++i) independent = !dependsOn(spans, spansOf(colls[i], nranks));
    if (!independent) break;
  }
  return end;
}

}  // namespace collcomm::detail
