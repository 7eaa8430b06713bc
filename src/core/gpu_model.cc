// The topology's rings for a GPU communicator (gpu_model.h).
#include "core/gpu_model.h"

#include <mutex>
#include <string>
#include <vector>

#include "common/log.h"
#include "plan/ring_channels.h"
#include "topo/topo.h"

namespace collcomm::detail {
namespace {

// The host's topology, read once per process: every GPU communicator of the process (and every
// rank of one) looks at the same machine, and detection walks sysfs and NVML.
struct HostTopology {
  std::once_flag once;
  bool ok = false;
  std::string why;  // when not ok
  TopoSystem sys;
};

const HostTopology& hostTopology() {
  static HostTopology topo;
  std::call_once(topo.once, [] {
    topo.ok = isOk(getTopology(&topo.sys));
    if (!topo.ok) topo.why = threadLastError();
    clearThreadLastError();
  });
  return topo;
}

std::string ringText(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : " ") + std::to_string(r);
  return s;
}

void keepFixedChoices(const ccComm* comm, const std::string& why) {
  CC_INFO(kSubsysInit, "rank %d: the GPU planner keeps its fixed choices: %s", comm->rank, why.c_str());
}

}  // namespace

void describeGpuRings(ccComm* comm) {
  if (comm->config.device < 0 || comm->nranks < 2) return;
  if (comm->mostRanksOnADevice > 1) return;  // the shared-device choices are measured ones (tuner.h)
  std::vector<int64_t> busIds;
  for (const PeerInfo& p : comm->peers) {
    // Each host would read its own topology, and their rings must agree: one host's plan only.
    if (p.hostHash != comm->peers[0].hostHash)
      return keepFixedChoices(comm, "its ranks are on several hosts (rank 0 on " + std::string(comm->peers[0].host) +
                                        ", rank " + std::to_string(p.rank) + " on " + p.host + ")");
    if (p.deviceBusId < 0)
      return keepFixedChoices(comm, "CUDA did not tell the PCI bus id of rank " + std::to_string(p.rank) + "'s device");
    busIds.push_back(p.deviceBusId);
  }
  const HostTopology& topo = hostTopology();
  if (!topo.ok) return keepFixedChoices(comm, "no topology (" + topo.why + ")");
  SingleNodeRings rings;
  if (!isOk(ringsOverBusIds(topo.sys, busIds, &rings))) {
    keepFixedChoices(comm, threadLastError());
    clearThreadLastError();
    return;
  }
  comm->gpuModel = rings.graph;
  for (int gpu : rings.order)
    for (int r = 0; r < comm->nranks; ++r)
      if (topo.sys.nodes(NodeType::kGpu)[gpu].id == busIds[r]) comm->gpuRingRanks.push_back(r);
  CC_INFO(kSubsysInit,
          "rank %d: the GPU planner prices rings over %d GPUs of the %s topology: %s hops, up to %d channels of %.1f "
          "GB/s; ring %s",
          comm->rank, rings.graph.nRanks, topo.sys.source.c_str(), hopClassName(rings.graph.intraHop),
          rings.graph.maxChannels, static_cast<double>(rings.graph.bwPerChannel), ringText(comm->gpuRingRanks).c_str());
}

}  // namespace collcomm::detail
