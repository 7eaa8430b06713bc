// Which jobs of GPU ranks a communicator accepts (see gpu_job.h).
#include "core/gpu_job.h"

namespace collcomm::detail {

bool sameGpu(const PeerInfo& a, const PeerInfo& b) {
  if (a.device < 0 || b.device < 0) return false;
  if (a.processToken == b.processToken) return a.device == b.device;
  if (a.machineHash != b.machineHash) return false;
  if (a.deviceBusId < 0 || b.deviceBusId < 0) return true;
  return a.deviceBusId == b.deviceBusId;
}

Status checkGpuJob(const std::vector<PeerInfo>& peers, int rank) {
  const PeerInfo& me = peers[rank];
  for (const PeerInfo& p : peers) {
    if ((p.device >= 0) != (me.device >= 0))
      return CC_ERROR(Status::kInvalidUsage,
                      "rank %d asked for a %s communicator but rank %d (host %s) for a %s one; every rank of a "
                      "communicator must be on a GPU, or none",
                      rank, me.device >= 0 ? "GPU" : "host", p.rank, p.host, p.device >= 0 ? "GPU" : "host");
  }
  if (me.device < 0) return kOk;
  // Checked for every pair, not only this rank's: every rank must come to the same verdict.
  for (const PeerInfo& a : peers) {
    for (const PeerInfo& b : peers) {
      if (b.rank <= a.rank || a.processToken == b.processToken) continue;
      if (sameGpu(a, b) && !(a.deviceMps && b.deviceMps))
        return CC_ERROR(Status::kInvalidUsage,
                        "rank %d (host %s, pid %d) and rank %d (pid %d) share a GPU from different processes, and "
                        "CUDA's MPS does not run there: the GPU would run one process's kernels at a time, and "
                        "kernels that wait on each other would stall. Make them threads of one process "
                        "(ccCommInitAll, or ccCommInitRank from threads), give each process its own GPU, or start "
                        "the MPS control daemon (nvidia-cuda-mps-control -d) before the job",
                        a.rank, a.host, a.pid, b.rank, b.pid);
    }
  }
  return kOk;
}

}  // namespace collcomm::detail
