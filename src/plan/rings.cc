// Ring orders from where the ranks run (rings.h).
#include "plan/rings.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

#include "common/params.h"

namespace collcomm::detail {

RingOrder ringOrderFromParams() {
  const std::string word = paramStr(Param::kRingOrder);
  if (word == "identity") return RingOrder::kIdentity;
  if (word == "reverse") return RingOrder::kReverse;
  return RingOrder::kHosts;
}

std::vector<std::vector<int>> planRings(const std::vector<RankPlace>& places, int nChannels, RingOrder order,
                                        const std::vector<int>& topologyOrder) {
  const int n = static_cast<int>(places.size());
  std::vector<int> ring(n);
  std::iota(ring.begin(), ring.end(), 0);
  if (order == RingOrder::kHosts && static_cast<int>(topologyOrder.size()) == n) {
    ring = topologyOrder;
  } else if (order != RingOrder::kIdentity) {
    // Each host and each process is named by its lowest rank: the keys' values never order
    // anything, so every rank sorts alike.
    std::unordered_map<uint64_t, int> hostFirst, processFirst;
    for (int r = 0; r < n; ++r) {
      hostFirst.emplace(places[r].host, r);
      processFirst.emplace(places[r].process, r);
    }
    std::stable_sort(ring.begin(), ring.end(), [&](int a, int b) {
      const int ha = hostFirst.at(places[a].host), hb = hostFirst.at(places[b].host);
      if (ha != hb) return ha < hb;
      return processFirst.at(places[a].process) < processFirst.at(places[b].process);
    });
    if (order == RingOrder::kReverse) std::reverse(ring.begin(), ring.end());
  }
  return std::vector<std::vector<int>>(static_cast<size_t>(std::max(nChannels, 0)), ring);
}

int hostCrossings(const std::vector<RankPlace>& places, const std::vector<int>& ring) {
  const size_t n = ring.size();
  int crossings = 0;
  for (size_t i = 0; i < n; ++i) crossings += places[ring[i]].host != places[ring[(i + 1) % n]].host;
  return crossings;
}

}  // namespace collcomm::detail
