// The channels' ring orders of a communicator: plan/ decides them, core/init.cc connects them.
//
// Rule: the ranks of one host are contiguous on the ring, hosts in the order of their lowest rank,
// and within a host the ranks of one process contiguous (processes in the order of their lowest
// rank), ranks in rank order. A ring over H >= 2 hosts then crosses between hosts exactly H times,
// whatever the numbering (the identity ring over ranks numbered round-robin across hosts crosses on
// every hop), and between processes of a host as few times as it can.
//
// Every channel gets the same order: on a host communicator the channels share each host's one
// network path and each process's proxy thread, so a different order per channel would move no
// traffic off a busier link here. (Rail-aware orders for GPU nodes, one NIC per channel, belong
// with the topology graph and are not made yet; one node's order from the graph is.)
//
// Pure: its inputs are what every rank knows alike after the peer exchange (core/peer_info.h), so
// every rank computes the same rings without talking.
#pragma once

#include <cstdint>
#include <vector>

namespace collcomm::detail {

// Where one rank runs: equal keys <=> same host (PeerInfo::hostHash), same process
// (PeerInfo::processToken).
struct RankPlace {
  uint64_t host;
  uint64_t process;
};

// COLLCOMM_RING_ORDER: kHosts is the rule above (the default); kIdentity the ranks in rank order
// (ring i sends to i + 1); kReverse the hosts order backwards, so every ring consumer meets a ring
// that is not the identity even on one host (tests).
enum class RingOrder { kHosts, kIdentity, kReverse };

// The order COLLCOMM_RING_ORDER names (params.h checked the word; unset: kHosts).
RingOrder ringOrderFromParams();

// nChannels rings, each the ranks 0..places.size()-1 in ring order: ring[i] sends to ring[i + 1],
// the last to the first. topologyOrder (every rank, once): a GPU communicator's ranks in the order
// the topology's rings visit their devices (plan/ring_channels.h), which replaces the rule above
// under kHosts (its ranks share one process, so the rule would give rank order).
std::vector<std::vector<int>> planRings(const std::vector<RankPlace>& places, int nChannels, RingOrder order,
                                        const std::vector<int>& topologyOrder = {});

// How many times the ring `ring` passes from one host to another over a full turn (0 on one host).
int hostCrossings(const std::vector<RankPlace>& places, const std::vector<int>& ring);

}  // namespace collcomm::detail
