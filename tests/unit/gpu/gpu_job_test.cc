// Which jobs of GPU ranks a communicator accepts (core/gpu_job.h), from the PeerInfo every rank
// was told: the rule runs in every build, CUDA or not, since it needs no GPU.
#include "core/gpu_job.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"

namespace collcomm::detail {
namespace {

struct Rank {
  int device = 0;
  uint64_t process = 1;
  uint64_t host = 1;
  int64_t busId = 0x100;
  bool mps = false;
};

std::vector<PeerInfo> job(const std::vector<Rank>& ranks) {
  std::vector<PeerInfo> peers;
  for (size_t r = 0; r < ranks.size(); ++r) {
    PeerInfo p{};
    p.rank = static_cast<int>(r);
    p.pid = 1000 + static_cast<int>(ranks[r].process);
    p.device = ranks[r].device;
    p.processToken = ranks[r].process;
    p.hostHash = p.machineHash = ranks[r].host;
    p.deviceBusId = ranks[r].busId;
    p.deviceMps = ranks[r].mps ? 1 : 0;
    snprintf(p.host, sizeof(p.host), "node%llu", static_cast<unsigned long long>(ranks[r].host));
    peers.push_back(p);
  }
  return peers;
}

// Every rank's verdict on the job, which must be the same: kOk, or the one refusal.
Status verdict(const std::vector<PeerInfo>& peers, std::string* why) {
  Status first = kOk;
  for (size_t r = 0; r < peers.size(); ++r) {
    clearThreadLastError();
    const Status s = checkGpuJob(peers, static_cast<int>(r));
    const std::string said = isOk(s) ? "" : threadLastError();
    if (r == 0) {
      first = s;
      *why = said;
    } else {
      EXPECT_EQ(s, first) << "rank " << r << " decided otherwise: " << said;
      EXPECT_EQ(said, *why) << "rank " << r;
    }
  }
  return first;
}

TEST(GpuJob, ThreadsOfOneProcessOnAnyDevices) {
  std::string why;
  EXPECT_EQ(verdict(job({{0}, {0}, {1}, {0}}), &why), kOk) << why;
}

TEST(GpuJob, ProcessesOnDistinctGpusOfOneHost) {
  std::string why;
  EXPECT_EQ(verdict(job({{.process = 1, .busId = 0x100},
                         {.process = 2, .busId = 0x200},
                         {.device = 1, .process = 2, .busId = 0x300}}),
                    &why),
            kOk)
      << why;
}

TEST(GpuJob, ProcessesSharingAGpuNeedMps) {
  std::string why;
  // Ordinal 0 in one process and 1 in the other, one bus id: one GPU.
  ASSERT_EQ(verdict(job({{.device = 0, .process = 1}, {.device = 1, .process = 2}}), &why), Status::kInvalidUsage);
  EXPECT_NE(why.find("rank 0 (host node1, pid 1001) and rank 1 (pid 1002) share a GPU"), std::string::npos) << why;
  EXPECT_NE(why.find("MPS"), std::string::npos) << why;
  // MPS on one side only is not enough; on both it is.
  EXPECT_EQ(verdict(job({{.process = 1, .mps = true}, {.process = 2}}), &why), Status::kInvalidUsage);
  EXPECT_EQ(verdict(job({{.process = 1, .mps = true}, {.process = 2, .mps = true}}), &why), kOk) << why;
  // A GPU whose bus id CUDA could not tell may be the other process's: MPS is asked for.
  EXPECT_EQ(verdict(job({{.process = 1, .busId = -1}, {.process = 2, .busId = 0x200}}), &why), Status::kInvalidUsage);
}

TEST(GpuJob, HostsApartJoinOverNet) {
  std::string why;
  // One bus id on two machines is two GPUs.
  EXPECT_EQ(
      verdict(job({{.process = 1, .host = 1}, {.process = 2, .host = 2}, {.process = 3, .host = 2, .busId = 0x200}}),
              &why),
      kOk)
      << why;
  // Hosts that are one machine (network namespaces, containers: one boot id) may still share a GPU.
  std::vector<PeerInfo> peers = job({{.process = 1, .host = 1}, {.process = 2, .host = 2}});
  peers[1].machineHash = peers[0].machineHash;
  ASSERT_EQ(verdict(peers, &why), Status::kInvalidUsage);
  EXPECT_NE(why.find("rank 0 (host node1, pid 1001) and rank 1 (pid 1002) share a GPU"), std::string::npos) << why;
  peers[0].deviceMps = peers[1].deviceMps = 1;
  EXPECT_EQ(verdict(peers, &why), kOk) << why;
}

TEST(GpuJob, GpuAndHostRanksDoNotMix) {
  std::string why;
  std::vector<PeerInfo> peers = job({{0}, {0}});
  peers[1].device = -1;
  clearThreadLastError();
  EXPECT_EQ(checkGpuJob(peers, 0), Status::kInvalidUsage);
  EXPECT_NE(threadLastError().find("every rank of a communicator must be on a GPU, or none"), std::string::npos)
      << threadLastError();
  EXPECT_EQ(checkGpuJob(peers, 1), Status::kInvalidUsage);
}

}  // namespace
}  // namespace collcomm::detail
