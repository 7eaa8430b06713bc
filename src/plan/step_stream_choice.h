// Whether a far operation's FIFO steps stream, learned from the operations' own times.
//
// While the receiver finds this core far (device/host/core_distance.h), the sender may write its
// large FIFO steps with streaming stores. What that buys depends on the kind of far phase, which
// the receiver's one timed load cannot tell apart (docs/lab/2026-11-25.md, "Two kinds of far
// phase"): in one, streamed steps win 5-6x for every collective; in the other, they win 2x for
// AllReduce and lose 1.2-2x for Broadcast, AllGather and ReduceScatter up to 4 MiB. So each
// communicator times its far operations both ways, per collective and size (a power of two), and
// keeps the faster, trying the other again now and then: a run of kRun operations every
// kRetryClose while the two are within kFarApart, every kRetryFar once one is slower by more. The
// first operation after a change of way is not counted (it pays for the FIFO lines the other way
// left behind: in cache, or in memory). Each far phase starts afresh. Near, steps never stream (the
// receivers' verdict is near), and nothing is learned.
//
// Control tier, one per communicator, used by the thread that runs its operations.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "collectives/coll_list.h"

namespace collcomm::detail {

class StepStreamChoice {
 public:
  // At the start of an operation whose plan lets its steps stream: whether they may, given that
  // the receivers find this core far or not (`far`: the tuning input the executor reports,
  // Executor::receiversFindFar).
  bool choose(CollKind kind, size_t bytes, bool far);
  // Whether the operation just chosen for will be counted (far, and not the first of its way):
  // only then is it worth timing.
  bool wantsTime() const { return pending_ != nullptr && pendingCounts_; }
  // The operation chosen for last took `ns`; an operation that failed is not recorded.
  void record(uint64_t ns);

  // Tuning: counted samples of each way before the faster is kept; operations per run of one way;
  // how often the slower is tried again (in operations of the size), and what counts as far apart.
  static constexpr uint32_t kWarmSamples = 2;
  static constexpr uint32_t kRun = 3;
  static constexpr uint32_t kRetryClose = 32;
  static constexpr uint32_t kRetryFar = 256;
  static constexpr double kFarApart = 1.5;

 private:
  static constexpr int kSizeBuckets = 48;  // log2 of the bytes, capped
  struct Way {
    double nsPerByte = 0;  // running average (1/4 weight to the newest)
    uint32_t samples = 0;
  };
  struct Bucket {
    Way way[2];  // [0]: plain stores, [1]: streamed
    uint32_t ops = 0;
    int lastWay = -1;       // the way of the bucket's previous operation
    int runWay = 0;         // the way of the run under way ...
    uint32_t runLeft = 0;   // ... and its operations still to come
  };
  std::array<Bucket, kNumCollKinds * kSizeBuckets> buckets_{};
  Bucket* pending_ = nullptr;  // the operation chosen for last, until recorded
  int pendingWay_ = 0;
  bool pendingCounts_ = false;  // false for the first operation after a change of way
  size_t pendingBytes_ = 0;
  bool far_ = false;  // the last operation started far
};

}  // namespace collcomm::detail
