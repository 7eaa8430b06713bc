// The communicator's side of a plan (op_plan.h).
#include "core/op_plan.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace collcomm::detail {

// Read once: channels, rings and steps do not change after init (the ring step is the one every
// rank agreed on, core/init.cc agreeRingStep).
void makeShape(ccComm* comm) {
  CommPlans& p = comm->plans;
  std::lock_guard<std::mutex> lock(p.shapeMu);
  if (p.shapeReady.load(std::memory_order_relaxed)) return;
  for (const Channel& ch : comm->channels) p.rings.push_back(PlanRing{ch.ringRanks.data(), ch.ringPos});
  for (const RankTree& t : comm->trees) p.trees.push_back(PlanTree{t.node.data(), t.root});
  PlanShape& s = p.shape;
  s.rank = comm->rank;
  s.nranks = comm->nranks;
  s.gpu = comm->gpu() != nullptr;
  s.nChannels = static_cast<int>(comm->channels.size());
  s.rings = p.rings.data();
  s.trees = p.trees.size() == p.rings.size() ? p.trees.data() : nullptr;
  s.maxGpuChannels = comm->gpu() ? std::min(comm->gpu()->maxChannels(), comm->gpuChannelCap) : 0;
  s.gpuSharedDevice = comm->gpu() != nullptr && comm->mostRanksOnADevice > 1;
  s.gpuModel = comm->gpuModel ? &*comm->gpuModel : nullptr;
  s.reach = comm->directReach;
  std::vector<uint64_t> hosts;
  for (const PeerInfo& peer : comm->peers)
    if (std::find(hosts.begin(), hosts.end(), peer.hostHash) == hosts.end()) hosts.push_back(peer.hostHash);
  s.nHosts = std::max(1, static_cast<int>(hosts.size()));
  const bool connected = comm->nranks > 1 && !comm->channels.empty();
  const SendConn* send = connected ? &comm->channels[0].send : nullptr;
  s.simpleStepBytes = connected ? send->simpleStepMax : comm->fifoSizes.ring.simpleStepBytes;
  s.llStepBytes = (connected ? send->llStepLines : comm->fifoSizes.ring.llStepLines) * kLlBytesPerLine;
  p.shapeReady.store(true, std::memory_order_release);
}

}  // namespace collcomm::detail
