#include "core/p2p_rounds.h"

#include <algorithm>

namespace collcomm::detail {

std::vector<std::vector<ExecTransfer>> p2pRounds(const std::vector<ExecTransfer>& transfers, int rank, int nranks,
                                                 size_t perRun) {
  const int span = static_cast<int>(std::max<size_t>(perRun / 2, 1));
  const int nRounds = (nranks + span - 1) / span;
  std::vector<std::vector<ExecTransfer>> rounds(static_cast<size_t>(nRounds));
  for (const ExecTransfer& t : transfers) {
    const int d = t.isSend ? t.peer - rank : rank - t.peer;
    const int distance = ((d % nranks) + nranks) % nranks;
    rounds[static_cast<size_t>(distance / span)].push_back(t);
  }
  std::erase_if(rounds, [](const std::vector<ExecTransfer>& r) { return r.empty(); });
  return rounds;
}

}  // namespace collcomm::detail
