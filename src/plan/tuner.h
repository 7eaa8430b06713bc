// Per-operation choices: protocol and channel count for a collective of a given size.
// Control tier (runs once per operation, reads no environment: the communicator caches it).
#pragma once

#include <cstddef>

#include "collectives/coll_list.h"
#include "common/status.h"

namespace collcomm::detail {

struct TunerConfig {
  int forcedProto = -1;        // -1: choose; else a Protocol value (COLLCOMM_PROTO)
  size_t llThreshold = 256;  // largest message, in bytes, sent with LL (COLLCOMM_LL_THRESHOLD)
};

struct CollPlan {
  Protocol proto;
  int nChannels;
};

// Reads COLLCOMM_PROTO / COLLCOMM_ALGO / COLLCOMM_LL_THRESHOLD; rejects unknown names.
Status loadTunerConfig(TunerConfig* out);

CollPlan planCollective(const TunerConfig& cfg, CollKind kind, size_t bytes, int nranks, int nChannels);

}  // namespace collcomm::detail
