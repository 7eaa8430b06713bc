// What a Simple step says of the call that sent it. Ranks that make different calls on one
// connection (a float AllReduce against an int32 one, Sum against Max, Broadcast from different
// roots, AllReduce against ReduceScatter) may cut their data into steps of the same size: a size
// check alone lets them reduce each other's bytes into a wrong answer, or wait until the deadline.
// So each step's size word (FifoCtrl::simpleBytes) carries the sender's call tag in its high 32
// bits, and the receiver compares it with its own (protocols.h ProtoSimple::acquireRecv).
//
// Over NET the size word crosses the network behind each step's payload (net_transport.cc), so
// the receiver checks it as over P2P and SHM. LL steps carry no size word and no tag.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "common/host_device.h"
#include "device/reduce_ops.h"

namespace collcomm::detail {

// Bits 0-3: the collective's kind + 1 (kP2pCallKind for point-to-point transfers, which pair up
// whatever the calls that made them: a Send meets a Recv); 4-8: the element type, 9-11: the
// reduction's kind (both only for reducing kinds: the others move bytes); 12-31: the root + 1
// (Broadcast and Reduce; 0 otherwise; roots beyond 2^20 - 2 wrap, which only weakens the check).
inline constexpr uint32_t kP2pCallKind = 15;

CC_HD constexpr uint32_t callTagOf(CollKind kind, ccDataType_t dtype, RedOpKind op, int root) {
  const bool reduces = collReduces(kind);
  const bool rooted = kind == CollKind::kBroadcast || kind == CollKind::kReduce;
  uint32_t tag = static_cast<uint32_t>(kind) + 1;
  if (reduces) tag |= (static_cast<uint32_t>(dtype) & 0x1f) << 4 | (static_cast<uint32_t>(op) & 0x7) << 9;
  if (rooted) tag |= ((static_cast<uint32_t>(root) + 1) & 0xfffff) << 12;
  return tag;
}

inline constexpr uint32_t kP2pCallTag = kP2pCallKind;

// The size word of a step of `bytes` sent by a call tagged `tag`, its parts, and its own size.
inline constexpr size_t kStepWordBytes = sizeof(uint64_t);
CC_HD constexpr uint64_t stepWord(uint64_t bytes, uint32_t tag) { return bytes | static_cast<uint64_t>(tag) << 32; }
CC_HD constexpr uint64_t stepWordBytes(uint64_t word) { return word & 0xffffffffu; }
CC_HD constexpr uint32_t stepWordTag(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

// Whether a step whose size word is `sent` belongs to the receiver's step of `bytes` in its call
// tagged `tag`.
CC_HD constexpr bool stepMatches(uint64_t sent, uint64_t bytes, uint32_t tag) { return sent == stepWord(bytes, tag); }

// The sentence for a step that does not match (stepMatches false): the peer's other call, named
// by both tags, or its other step size. Written into buf (NUL-terminated, cut to size). Host code.
void describeStepMismatch(uint64_t sent, uint64_t expected, char* buf, unsigned size);

}  // namespace collcomm::detail
