// The collectives, listed once: X(Kind, "name", reduces?). Enums, names and dispatch tables in the
// rest of the library expand from this list.
#pragma once

// clang-format off
#define CC_COLL_LIST(X)            \
  X(AllReduce,     "AllReduce",     true)  \
  X(Broadcast,     "Broadcast",     false) \
  X(Reduce,        "Reduce",        true)  \
  X(AllGather,     "AllGather",     false) \
  X(ReduceScatter, "ReduceScatter", true)  \
  X(AlltoAll,      "AlltoAll",      false) \
  X(Gather,        "Gather",        false) \
  X(Scatter,       "Scatter",       false) \
  X(Send,          "Send",          false) \
  X(Recv,          "Recv",          false)
// clang-format on

#include "common/host_device.h"

namespace collcomm::detail {

enum class CollKind : int {
#define CC_COLL_ENUM(kind, name, reduces) k##kind,
  CC_COLL_LIST(CC_COLL_ENUM)
#undef CC_COLL_ENUM
};

inline const char* collName(CollKind k) {
  switch (k) {
#define CC_COLL_NAME(kind, name, reduces) \
  case CollKind::k##kind:                 \
    return name;
    CC_COLL_LIST(CC_COLL_NAME)
#undef CC_COLL_NAME
  }
  return "?";
}

// Host and device code alike (a kernel's shard picks its reduction from it, a step's call tag too).
CC_HD constexpr bool collReduces(CollKind k) {
  switch (k) {
#define CC_COLL_REDUCES(kind, name, reduces) \
  case CollKind::k##kind:                    \
    return reduces;
    CC_COLL_LIST(CC_COLL_REDUCES)
#undef CC_COLL_REDUCES
  }
  return false;
}

enum class Protocol : int { kSimple = 0, kLL = 1 };
inline const char* protocolName(Protocol p) { return p == Protocol::kLL ? "LL" : "Simple"; }

inline constexpr int kNumCollKinds = 0
#define CC_COLL_COUNT(kind, name, reduces) +1
    CC_COLL_LIST(CC_COLL_COUNT)
#undef CC_COLL_COUNT
    ;

// Ring: every collective. OneShot: AllReduce; two ranks over the ring's connections
// (collectives/one_shot_all_reduce.h), more over per-peer connections (core/enqueue.cc).
// Direct: AllGather, Broadcast, ReduceScatter, AllReduce when every rank can read every other
// rank's memory (same process, or cross-memory attach on one host): each byte is copied once, from
// the peer's buffer (device/host/host_direct.cc).
// Tree: AllReduce up and down each channel's tree (plan/trees.h, collectives/tree_all_reduce.h)
// over tree connections made on first use (core/tree_conns.h); host communicators.
enum class Algorithm : int { kRing = 0, kOneShot = 1, kDirect = 2, kTree = 3 };
inline const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kOneShot: return "OneShot";
    case Algorithm::kDirect: return "Direct";
    case Algorithm::kTree: return "Tree";
    case Algorithm::kRing: break;
  }
  return "Ring";
}

}  // namespace collcomm::detail
