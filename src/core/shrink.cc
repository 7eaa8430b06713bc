// Shrink: the remaining ranks (the parent's, minus the excluded) each send the lowest of them what
// they exclude; it checks that every one names the same ranks, answers each with a fresh unique id
// (or the reason it refuses), and the remaining ranks initialise like any communicator. Only the
// remaining ranks talk, each only to the lowest, over the parent's bootstrap: the excluded ranks may
// be dead, the parent's root among them.
#include "core/shrink.h"

#include <algorithm>
#include <string>

#include "core/init.h"

namespace collcomm::detail {
namespace {

constexpr uint64_t kShrinkTagBase = 0x5348524b00000000ull;  // "SHRK" + the pair's count
constexpr int kListedRanks = 8;                             // ranks a message lists, for the sentences
// A remaining rank waits for the lowest one's answer this much longer than the lowest waits for the
// others, so that a refusal decided at the lowest's deadline still reaches it.
constexpr double kAnswerGraceSeconds = 5.0;

// What a remaining rank excludes, as it tells the lowest remaining rank; or that it cannot take part.
struct ShrinkProposal {
  uint64_t excludedHash;
  int32_t excludedCount;
  int32_t refused;                 // 0, or the Status of this rank's own failure (it takes no part)
  int32_t excluded[kListedRanks];  // the first ones, for the sentence
};

// What the lowest remaining rank decided.
enum class Verdict : int32_t {
  kAgreed,       // the id follows
  kListsDiffer,  // culprit names other ranks
  kNotHeard,     // no proposal came from culprit (status: the wait's)
  kRefused,      // culprit could not take part (status: its failure)
  kNoId,         // the lowest could not make the id
};

// The lowest remaining rank's answer.
struct ShrinkAnswer {
  int32_t status;
  Verdict verdict;
  int32_t culprit;
  ShrinkProposal lowest;
  UniqueIdData id;
};

ShrinkProposal proposalOf(const std::vector<int>& excluded) {
  ShrinkProposal p{};
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sorted ranks
  for (int r : excluded) {
    for (int b = 0; b < 4; ++b) h = (h ^ ((static_cast<uint32_t>(r) >> (8 * b)) & 0xffu)) * 1099511628211ull;
  }
  p.excludedHash = h;
  p.excludedCount = static_cast<int32_t>(excluded.size());
  for (size_t i = 0; i < excluded.size() && i < kListedRanks; ++i) p.excluded[i] = excluded[i];
  return p;
}

bool sameRanks(const ShrinkProposal& a, const ShrinkProposal& b) {
  return a.excludedHash == b.excludedHash && a.excludedCount == b.excludedCount;
}

std::string listOf(const ShrinkProposal& p) {
  std::string s = "[";
  for (int i = 0; i < p.excludedCount && i < kListedRanks; ++i) s += (i ? ", " : "") + std::to_string(p.excluded[i]);
  if (p.excludedCount > kListedRanks) s += ", ... (" + std::to_string(p.excludedCount) + " ranks)";
  return s + "]";
}

// Each pair of ranks that talks in a shrink (the lowest remaining rank and another) counts the
// shrinks it talked in: the count, not a count of all shrinks, makes the tag, since each shrink is
// called by other ranks. Both sides count every shrink that got past its arguments, a refused one
// too; a call refused at its arguments, or ranks that disagree on who is lowest (they exclude
// different ranks), leave a pair's counts apart, and a later shrink between them times out.
uint64_t shrinkTag(ccComm* parent, int peer) {
  if (parent->shrinksWith.empty()) parent->shrinksWith.assign(static_cast<size_t>(parent->nranks), 0);
  return kShrinkTagBase | parent->shrinksWith[static_cast<size_t>(peer)]++;
}

// The lowest remaining rank: hears every other remaining rank, then answers each. `local` not ok:
// this rank cannot take part, and says so to each without waiting for them.
Status agreeAsLowest(ccComm* parent, const std::vector<int>& members, const ShrinkProposal& mine, Status local,
                     UniqueIdData* id) {
  const Deadline deadline = Deadline::afterSeconds(parent->config.timeoutSeconds);
  const char* const* host = parent->hostNames.data();
  ShrinkAnswer answer{};
  answer.verdict = isOk(local) ? Verdict::kAgreed : Verdict::kRefused;
  answer.culprit = isOk(local) ? -1 : parent->rank;
  answer.lowest = mine;
  std::vector<uint64_t> tags(members.size());
  for (size_t i = 1; i < members.size(); ++i) tags[i] = shrinkTag(parent, members[i]);
  Status agreed = local;
  for (size_t i = 1; i < members.size() && isOk(agreed); ++i) {
    const int r = members[i];
    ShrinkProposal theirs{};
    agreed = parent->bootstrap->recv(r, tags[i], &theirs, sizeof(theirs), deadline);
    if (!isOk(agreed))
      answer.verdict = Verdict::kNotHeard;
    else if (theirs.refused != 0) {
      const Status failure = static_cast<Status>(theirs.refused);
      agreed = CC_ERROR(failure, "ccCommShrink: rank %d (host %s) could not take part: its own call failed (%s)", r,
                        host[r], ccGetErrorString(toResult(failure)));
      answer.verdict = Verdict::kRefused;
    } else if (!sameRanks(theirs, mine)) {
      agreed = CC_ERROR(Status::kInvalidUsage,
                        "ccCommShrink: rank %d (host %s) excludes ranks %s and rank %d (host %s) ranks %s; every "
                        "remaining rank must name the same ranks",
                        r, host[r], listOf(theirs).c_str(), parent->rank, host[parent->rank], listOf(mine).c_str());
      answer.verdict = Verdict::kListsDiffer;
    }
    if (!isOk(agreed)) answer.culprit = r;
  }
  if (isOk(agreed)) {
    // Not createUniqueId: under COLLCOMM_COMM_ID that would hand out the parent's root and secret.
    agreed = createRandomUniqueId(&answer.id);
    if (!isOk(agreed)) {
      answer.verdict = Verdict::kNoId;
      answer.culprit = parent->rank;
    }
  }
  answer.status = static_cast<int32_t>(agreed);
  // Every remaining rank hears the outcome, also those heard from before a refusal, with time of its
  // own (the wait above may have used all of the deadline); a send that fails leaves that rank to
  // its own deadline.
  const Deadline answering = Deadline::afterSeconds(kAnswerGraceSeconds);
  for (size_t i = 1; i < members.size(); ++i)
    (void)parent->bootstrap->send(members[i], tags[i], &answer, sizeof(answer), answering);
  *id = answer.id;
  return agreed;
}

// The sentence of a remaining rank whose lowest rank refused the shrink.
Status refusedBy(ccComm* parent, int lowest, const ShrinkAnswer& answer, const ShrinkProposal& mine) {
  const Status s = static_cast<Status>(answer.status);
  const char* const* host = parent->hostNames.data();
  const int c = answer.culprit;
  switch (answer.verdict) {
    case Verdict::kListsDiffer:
      return CC_ERROR(s,
                      "ccCommShrink: rank %d (host %s) excludes other ranks than rank %d (host %s), which excludes %s "
                      "(this rank: %s); every remaining rank must name the same ranks",
                      c, host[c], lowest, host[lowest], listOf(answer.lowest).c_str(), listOf(mine).c_str());
    case Verdict::kRefused:
      return CC_ERROR(s, "ccCommShrink: rank %d (host %s)%s could not take part: its own call failed (%s)", c, host[c],
                      c == lowest ? ", the lowest remaining rank," : "", ccGetErrorString(toResult(s)));
    case Verdict::kNoId:
      return CC_ERROR(s, "ccCommShrink: rank %d (host %s), the lowest remaining rank, could not make the new id (%s)",
                      lowest, host[lowest], ccGetErrorString(toResult(s)));
    case Verdict::kAgreed:
    case Verdict::kNotHeard:
      break;
  }
  return CC_ERROR(s,
                  "ccCommShrink: rank %d (host %s), the lowest remaining rank, did not hear from rank %d (host %s) "
                  "(%s): every rank not excluded must call ccCommShrink, and a dead one must be excluded",
                  lowest, host[lowest], c, host[c], ccGetErrorString(toResult(s)));
}

// Any other remaining rank: tells the lowest what it excludes and waits for the answer. `local` not
// ok: says it cannot take part, and waits for nothing.
Status agreeWithLowest(ccComm* parent, int lowest, ShrinkProposal mine, Status local, UniqueIdData* id) {
  const uint64_t tag = shrinkTag(parent, lowest);
  mine.refused = static_cast<int32_t>(local);
  if (!isOk(local)) {
    (void)parent->bootstrap->send(lowest, tag, &mine, sizeof(mine), Deadline::afterSeconds(kAnswerGraceSeconds));
    return local;
  }
  const double timeout = parent->config.timeoutSeconds;
  const Deadline deadline = Deadline::afterSeconds(timeout > 0 ? timeout + kAnswerGraceSeconds : 0);
  CC_CHECK(parent->bootstrap->send(lowest, tag, &mine, sizeof(mine), deadline));
  ShrinkAnswer answer{};
  CC_CHECK(parent->bootstrap->recv(lowest, tag, &answer, sizeof(answer), deadline));
  if (answer.status != static_cast<int32_t>(kOk)) return refusedBy(parent, lowest, answer, mine);
  *id = answer.id;
  return kOk;
}

}  // namespace

Status checkExcludedRanks(const ccComm* parent, const int* excludeRanks, int count, std::vector<int>* sorted) {
  if (count < 0 || (count > 0 && excludeRanks == nullptr))
    return CC_ERROR(Status::kInvalidArgument,
                    "ccCommShrink: excludeRanksCount is %d with excludeRanksList %p; give a count >= 0 and, when it "
                    "is above 0, the list",
                    count, static_cast<const void*>(excludeRanks));
  sorted->assign(excludeRanks, excludeRanks + count);
  std::sort(sorted->begin(), sorted->end());
  for (int i = 0; i < count; ++i) {
    const int r = (*sorted)[i];
    if (r < 0 || r >= parent->nranks)
      return CC_ERROR(Status::kInvalidArgument,
                      "ccCommShrink: excluded rank %d is not a rank of this communicator (0..%d)", r,
                      parent->nranks - 1);
    if (i > 0 && (*sorted)[i - 1] == r)
      return CC_ERROR(Status::kInvalidArgument, "ccCommShrink: rank %d is excluded twice", r);
    if (r == parent->rank)
      return CC_ERROR(Status::kInvalidArgument,
                      "ccCommShrink: rank %d excludes itself; only the remaining ranks call ccCommShrink", r);
  }
  return kOk;  // not every rank: this one is not excluded
}

Status checkShrinkable(ccComm* parent) {
  CC_CHECK(checkInitialised(parent, "ccCommShrink"));
  if (!parent->bootstrapUsable())
    return CC_ERROR(Status::kInvalidUsage,
                    "ccCommShrink: rank %d's communicator was revoked (ccCommRevoke) or aborted, which ends what "
                    "ccCommShrink talks over; ccCommShrink with CC_SHRINK_ABORT is the call that stops a "
                    "communicator and shrinks it",
                    parent->rank);
  return kOk;
}

Status commShrink(ccComm* parent, const std::vector<int>& excluded, const CommConfig& config, Status local,
                  ccComm** out) {
  if (isOk(local)) local = checkShrinkable(parent);
  std::vector<int> members;  // the new communicator's ranks, in the parent's order
  for (int r = 0, e = 0; r < parent->nranks; ++r) {
    if (e < static_cast<int>(excluded.size()) && excluded[e] == r)
      ++e;
    else
      members.push_back(r);
  }
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), parent->rank) - members.begin());
  const ShrinkProposal mine = proposalOf(excluded);
  UniqueIdData id{};
  if (!isOk(local)) {
    // This rank takes part only to refuse, where it can talk at all; its own sentence stays.
    if (parent->ready.load(std::memory_order_acquire) && parent->bootstrapUsable()) {
      const std::string why = threadLastError();
      if (newRank == 0)
        (void)agreeAsLowest(parent, members, mine, local, &id);
      else
        (void)agreeWithLowest(parent, members[0], mine, local, &id);
      setThreadLastError(why);
    }
    return local;
  }
  if (newRank == 0)
    CC_CHECK(agreeAsLowest(parent, members, mine, kOk, &id));
  else
    CC_CHECK(agreeWithLowest(parent, members[0], mine, kOk, &id));
  return commInit(out, static_cast<int>(members.size()), id, newRank, config);
}

}  // namespace collcomm::detail
