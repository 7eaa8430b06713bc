// Per-operation choices: protocol and channel count for a collective of a given size.
// Control tier (runs once per operation, reads no environment: the communicator caches it).
#pragma once

#include <cstddef>

#include "collectives/coll_list.h"
#include "common/status.h"

namespace collcomm::detail {

struct TunerConfig {
  int forcedProto = -1;        // -1: choose; else a Protocol value (COLLCOMM_PROTO)
  int forcedAlgo = -1;         // -1: choose; else an Algorithm value (COLLCOMM_ALGO)
  // Largest AllReduce run one-shot, in bytes one rank receives: message x (nranks - 1)
  // (COLLCOMM_ONESHOT_THRESHOLD).
  size_t oneShotThreshold = size_t{64} << 10;
  // Largest message, in bytes, sent with LL (COLLCOMM_LL_THRESHOLD; 0: LL only when forced); see
  // tuner.cc for why it is so small.
  size_t llThreshold = 16;
  // Smallest message, in bytes, whose results go to the user's buffer by streaming stores
  // (COLLCOMM_STREAM_THRESHOLD); below it the result stays in cache for the caller.
  size_t streamThreshold = size_t{4} << 20;
};

struct CollPlan {
  Protocol proto;
  Algorithm algo;
  int nChannels;
  bool streamResults;  // host: write results with streaming stores
};

// Reads COLLCOMM_PROTO / COLLCOMM_ALGO and the thresholds; rejects unknown names.
Status loadTunerConfig(TunerConfig* out);

CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels);

}  // namespace collcomm::detail
