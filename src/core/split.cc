// Split: all-gather (color, key) over the parent, order each color's members by (key, parent
// rank); the first member makes a fresh unique id and hands it to the others over the parent's
// bootstrap; then each color initialises like any communicator.
#include "core/split.h"

#include <algorithm>
#include <vector>

#include "core/init.h"

namespace collcomm::detail {
namespace {

constexpr uint64_t kSplitTagBase = 0x53504c5400000000ull;  // "SPLT" + sequence

struct SplitEntry {
  int color;
  int key;
  int rank;
};

}  // namespace

Status commSplit(ccComm* parent, int color, int key, const CommConfig& config, ccComm** out) {
  if (color < 0 && color != CC_SPLIT_NOCOLOR)
    return CC_ERROR(Status::kInvalidArgument, "ccCommSplit: color must be >= 0 or CC_SPLIT_NOCOLOR, not %d", color);
  CC_CHECK(checkInitialised(parent, "ccCommSplit"));
  const Deadline deadline = Deadline::afterSeconds(parent->config.timeoutSeconds);
  std::vector<SplitEntry> entries(parent->nranks);
  entries[parent->rank] = {color, key, parent->rank};
  CC_CHECK(parent->bootstrap->allGather(entries.data(), sizeof(SplitEntry), deadline));
  const uint64_t tag = kSplitTagBase + parent->bootstrapTagSeq++;
  if (color == CC_SPLIT_NOCOLOR) {
    *out = nullptr;
    return kOk;
  }
  std::vector<SplitEntry> members;
  for (const SplitEntry& e : entries)
    if (e.color == color) members.push_back(e);
  std::sort(members.begin(), members.end(),
            [](const SplitEntry& a, const SplitEntry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  int newRank = 0;
  while (members[newRank].rank != parent->rank) ++newRank;
  UniqueIdData id{};
  if (newRank == 0) {
    // Not createUniqueId: under COLLCOMM_COMM_ID that would hand out the parent's root and secret.
    CC_CHECK(createRandomUniqueId(&id));
    for (size_t i = 1; i < members.size(); ++i)
      CC_CHECK(parent->bootstrap->send(members[i].rank, tag, &id, sizeof(id), deadline));
  } else {
    CC_CHECK(parent->bootstrap->recv(members[0].rank, tag, &id, sizeof(id), deadline));
  }
  return commInit(out, static_cast<int>(members.size()), id, newRank, config);
}

}  // namespace collcomm::detail
