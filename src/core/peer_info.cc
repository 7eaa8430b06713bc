// Host and process identity for transport selection.
#include "core/peer_info.h"

#include <sched.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/params.h"
#include "core/gpu_job.h"
#include "device/executor.h"

namespace collcomm::detail {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string bootId() {
  char boot[64] = {};
  if (FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (fgets(boot, sizeof(boot), f) == nullptr) boot[0] = '\0';
    fclose(f);
  }
  return boot;
}

std::string hostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

uint64_t localHostHash() {
  // COLLCOMM_HOSTID (as NCCL_HOSTID): network namespaces or containers on one kernel share the
  // hostname and boot id but may need to count as separate hosts (NET between them).
  if (const std::string id = paramStr(Param::kHostid); !id.empty()) return fnv1a("hostid:" + id);
  return fnv1a(hostName() + bootId());
}

uint64_t localMachineHash() {
  const std::string boot = bootId();
  return fnv1a(boot.empty() ? "host:" + hostName() : "boot:" + boot);
}

uint64_t localProcessToken() {
  static std::mutex mu;
  static pid_t owner = 0;
  static uint64_t token = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != getpid()) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), 0) != static_cast<ssize_t>(sizeof(r))) r = 0;
    owner = getpid();
    token = r ^ (static_cast<uint64_t>(owner) << 32) ^ reinterpret_cast<uintptr_t>(&token);
  }
  return token;
}

namespace {

// This process's PID namespace: its /proc/self/ns/pid's device and inode (0 where unreadable).
uint64_t localPidNamespace() {
  struct stat st {};
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return (static_cast<uint64_t>(st.st_dev) << 32) ^ static_cast<uint64_t>(st.st_ino);
}

}  // namespace

PeerInfo localPeerInfo(int rank, int device) {
  PeerInfo info{};
  info.rank = rank;
  info.pid = getpid();
  info.hostHash = localHostHash();
  info.machineHash = localMachineHash();
  info.pidNamespace = localPidNamespace();
  info.processToken = localProcessToken();
  static std::atomic<uint64_t> made{0};
  info.commNonce = info.processToken ^ ((made.fetch_add(1) + 1) * 0x9e3779b97f4a7c15ull);
  info.device = device;
  info.deviceBusId = -1;
  if (device >= 0 && !isOk(cudaDeviceBusId(device, &info.deviceBusId))) {
    info.deviceBusId = -1;  // the planner then goes without the topology (core/gpu_model.cc)
    clearThreadLastError();
  }
  info.deviceMps = device >= 0 && cudaDeviceUsesMps(device) ? 1 : 0;
  if (const std::string id = paramStr(Param::kHostid); !id.empty())
    snprintf(info.host, sizeof(info.host), "%s", id.c_str());
  else
    gethostname(info.host, sizeof(info.host) - 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < 1024 && cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) info.cpuMask[cpu / 64] |= uint64_t{1} << (cpu % 64);
  }
  return info;
}

bool hostOversubscribed(const std::vector<PeerInfo>& peers, int rank, int threadsPerProcess) {
  uint64_t cpus[16] = {};
  int threads = 0;
  std::vector<uint64_t> processes;
  for (const PeerInfo& p : peers) {
    if (p.machineHash != peers[rank].machineHash) continue;
    ++threads;
    if (std::find(processes.begin(), processes.end(), p.processToken) == processes.end())
      processes.push_back(p.processToken);
    for (int w = 0; w < 16; ++w) cpus[w] |= p.cpuMask[w];
  }
  threads += threadsPerProcess * static_cast<int>(processes.size());
  int distinctCpus = 0;
  for (uint64_t w : cpus) distinctCpus += __builtin_popcountll(w);
  // A mask we could not read (all zero) says nothing: assume a core each.
  return distinctCpus > 0 && threads > distinctCpus;
}

int mostRanksOnOneDevice(const std::vector<PeerInfo>& peers) {
  int most = 1;
  for (const PeerInfo& p : peers) {
    const auto same = [&](const PeerInfo& q) { return sameGpu(q, p); };
    most = std::max(most, static_cast<int>(std::count_if(peers.begin(), peers.end(), same)));
  }
  return most;
}

}  // namespace collcomm::detail
