// Sentences for steps whose call or size does not match the receiver's (call_tag.h).
#include "device/call_tag.h"

#include <cstdio>
#include <string>

#include "device/dtypes.h"

namespace collcomm::detail {
namespace {

std::string describeCall(uint32_t tag) {
  const uint32_t kind = tag & 0xf;
  if (kind == kP2pCallKind) return "point-to-point transfers";
  if (kind == 0 || kind > static_cast<uint32_t>(kNumCollKinds)) return "an unknown call";
  const CollKind k = static_cast<CollKind>(kind - 1);
  std::string s = collName(k);
  if (collReduces(k))
    s += std::string(" of ") + dtypeName(static_cast<ccDataType_t>((tag >> 4) & 0x1f)) + " with " +
         redOpKindName(static_cast<RedOpKind>((tag >> 9) & 0x7));
  if (const uint32_t root = tag >> 12; root != 0)
    s += (k == CollKind::kReduce ? " to root " : " from root ") + std::to_string(root - 1);
  return s;
}

}  // namespace

void describeStepMismatch(uint64_t sent, uint64_t expected, char* buf, unsigned size) {
  const uint32_t theirs = stepWordTag(sent), mine = stepWordTag(expected);
  if (theirs != mine) {
    snprintf(buf, size,
             "made another call: %s, where this rank made %s; every rank must make the same calls in the same order",
             describeCall(theirs).c_str(), describeCall(mine).c_str());
    return;
  }
  snprintf(buf, size,
           "sent a step of %llu bytes where %llu were expected; the ranks made calls with different counts, types or "
           "operations",
           static_cast<unsigned long long>(stepWordBytes(sent)),
           static_cast<unsigned long long>(stepWordBytes(expected)));
}

}  // namespace collcomm::detail
