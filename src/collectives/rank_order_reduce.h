// The reduction of several local operands in a fixed order, the one place that decides that order
// for the algorithms that hold every rank's operand at once: the one-shot AllReduce on more than
// two ranks (one_shot_all_reduce.h) and Direct's ReduceScatter and AllReduce (direct.h). Every
// rank reducing the same operands in the same order gets the same bits, whatever the data type
// (floating sums are not associative, so the order is part of the result).
//
// Platform: tid(), nthreads(), barrier() (the contract in device/host/host_platform.h).
// Tier: data path; no allocation, no syscalls.
#pragma once

#include <cstddef>

#include "common/host_device.h"
#include "device/reduce_copy.h"

namespace collcomm::detail {

// dst[i] = post(((pre(x0[i]) (+) pre(x1[i])) (+) pre(x2[i])) ... (+) pre(x{n-1}[i])) for i < count,
// where xk = src(k) (a callable giving operand k's elements, so callers need no pointer table);
// n == 1 is x0 with pre (where `pre`) and post applied. With `pre` false no operand is
// pre-processed: the caller did it, with each operand's own rank's functor (a PreMulSum op's scalar
// is each rank's own). dst may be x0 or x1 (the
// first pass reads both before writing each element); no other overlap: a later operand that dst overlaps would be
// overwritten by an earlier pass. The cooperating threads split every pass and meet at a barrier between passes (a pass
// reads what the previous one wrote, not necessarily the same thread's elements).
template <class T, class Fn, class Platform, class Src>
CC_HD void reduceInRankOrder(Platform& plat, const Fn& fn, int n, Src src, T* dst, size_t count, bool pre = true) {
  const int tid = plat.tid(), nthreads = plat.nthreads();
  if (n == 1) {
    reduceCopy(fn, tid, nthreads, count, src(0), pre, static_cast<const T*>(nullptr), false, dst,
               static_cast<T*>(nullptr), true);
    return;
  }
  reduceCopy(fn, tid, nthreads, count, src(0), pre, src(1), pre, dst, static_cast<T*>(nullptr), n == 2);
  for (int k = 2; k < n; ++k) {
    plat.barrier();
    reduceCopy(fn, tid, nthreads, count, static_cast<const T*>(dst), false, src(k), pre, dst, static_cast<T*>(nullptr),
               k == n - 1);
  }
}

}  // namespace collcomm::detail
