#include "core/p2p_rounds.h"

#include <algorithm>
#include <map>
#include <utility>

namespace collcomm::detail {

std::vector<std::vector<ExecTransfer>> p2pRounds(const std::vector<ExecTransfer>& transfers, int rank, int nranks,
                                                 size_t perRun) {
  const size_t span = std::max<size_t>(perRun / 2, 1);
  const size_t roundsPerOrdinal = (static_cast<size_t>(nranks) + span - 1) / span;
  std::map<std::pair<bool, int>, size_t> seen;         // (isSend, peer) -> transfers so far
  std::map<size_t, std::vector<ExecTransfer>> rounds;  // by (ordinal, distance / span), in run order
  for (const ExecTransfer& t : transfers) {
    const size_t ordinal = seen[{t.isSend, t.peer}]++;
    const int d = t.isSend ? t.peer - rank : rank - t.peer;
    const size_t distance = static_cast<size_t>(((d % nranks) + nranks) % nranks);
    rounds[ordinal * roundsPerOrdinal + distance / span].push_back(t);
  }
  std::vector<std::vector<ExecTransfer>> out;
  out.reserve(rounds.size());
  for (auto& [key, round] : rounds) out.push_back(std::move(round));
  return out;
}

}  // namespace collcomm::detail
