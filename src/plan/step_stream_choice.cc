#include "plan/step_stream_choice.h"

#include <algorithm>
#include <bit>

namespace collcomm::detail {

bool StepStreamChoice::choose(CollKind kind, size_t bytes, bool far) {
  pending_ = nullptr;
  if (!far) {
    far_ = false;
    return true;  // nothing streams while the receivers find this core near; a far verdict mid-operation is followed
  }
  if (!far_) buckets_.fill(Bucket{});  // a new far phase, perhaps of the other kind
  far_ = true;
  const int log2 = bytes == 0 ? 0 : std::bit_width(bytes) - 1;
  Bucket& b = buckets_[static_cast<size_t>(kind) * kSizeBuckets + std::min(log2, kSizeBuckets - 1)];
  ++b.ops;
  int way;
  if (b.runLeft > 0) {
    way = b.runWay;
    --b.runLeft;
  } else if (b.way[1].samples < kWarmSamples || b.way[0].samples < kWarmSamples) {
    way = b.way[1].samples < kWarmSamples ? 1 : 0;  // streamed first: it was the only way before
    b.runWay = way;
    b.runLeft = kRun - 1;
  } else {
    const int best = b.way[1].nsPerByte <= b.way[0].nsPerByte ? 1 : 0;
    const double apart = b.way[1 - best].nsPerByte / b.way[best].nsPerByte;
    way = best;
    if (b.ops % (apart > kFarApart ? kRetryFar : kRetryClose) == 0) {
      way = 1 - best;
      b.runWay = way;
      b.runLeft = kRun - 1;
    }
  }
  pendingCounts_ = way == b.lastWay;
  b.lastWay = way;
  pending_ = &b;
  pendingWay_ = way;
  pendingBytes_ = bytes == 0 ? 1 : bytes;
  return way == 1;
}

void StepStreamChoice::record(uint64_t ns) {
  if (pending_ == nullptr || !pendingCounts_) {
    pending_ = nullptr;
    return;
  }
  Way& w = pending_->way[pendingWay_];
  const double v = static_cast<double>(ns) / static_cast<double>(pendingBytes_);
  w.nsPerByte = w.samples == 0 ? v : w.nsPerByte + (v - w.nsPerByte) / 4;
  ++w.samples;
  pending_ = nullptr;
}

}  // namespace collcomm::detail
