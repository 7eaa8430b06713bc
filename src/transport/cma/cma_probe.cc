// The init-time probe deciding whether ranks may read each other's memory (see cma_probe.h).
#include "transport/cma/cma_probe.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

#include "common/log.h"
#include "common/params.h"
#include "transport/cma/peer_memory.h"

namespace collcomm::detail {
namespace {

// What each rank publishes in the first round.
struct ProbeOffer {
  uint64_t address;  // of a word holding `value`, alive until the second round is over
  uint64_t value;
  int32_t pid;
  int32_t disabled;  // COLLCOMM_CMA_DISABLE=1 on this rank
};

// What each rank found in the second round.
struct ProbeResult {
  int32_t err;   // 0, an errno, or -1: the word read back did not hold the value
  int32_t peer;  // the rank it could not read (or -1)
};

}  // namespace

Status probeDirectAccess(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank, Deadline deadline,
                         DirectAccess* out) {
  const int n = static_cast<int>(peers.size());
  DirectAccess access;
  bool oneHost = true, oneProcess = true;
  for (const PeerInfo& p : peers) {
    oneHost &= p.hostHash == peers[0].hostHash;
    oneProcess &= p.processToken == peers[0].processToken;
  }
  if (!oneHost) {
    CC_INFO(kSubsysInit, "rank %d: Direct algorithm off: the ranks are on more than one host", rank);
    *out = access;
    return kOk;
  }
  if (oneProcess) {
    access.ok = true;
    *out = access;
    return kOk;
  }
  access.crossProcess = true;
  // Round 1: every rank's probe word. It lives on this stack frame until round 2 is over, after
  // which every peer has finished reading it.
  std::random_device rd;
  volatile uint64_t word = (static_cast<uint64_t>(rd()) << 32 | rd()) | 1;
  std::vector<ProbeOffer> offers(n);
  offers[rank] =
      ProbeOffer{reinterpret_cast<uint64_t>(&word), word, peers[rank].pid, paramInt(Param::kCmaDisable) != 0 ? 1 : 0};
  CC_CHECK(bootstrap.allGather(offers.data(), sizeof(ProbeOffer), deadline));
  std::vector<ProbeResult> results(n);
  ProbeResult& mine = results[rank];
  mine = ProbeResult{0, -1};
  for (int p = 0; p < n && mine.err == 0; ++p) {
    if (peers[p].processToken == peers[rank].processToken) continue;
    uint64_t got = 0;
    const int err = tryReadProcess(offers[p].pid, reinterpret_cast<const void*>(offers[p].address), &got, sizeof(got));
    if (err != 0 || got != offers[p].value) mine = ProbeResult{err != 0 ? err : -1, p};
  }
  CC_CHECK(bootstrap.allGather(results.data(), sizeof(ProbeResult), deadline));
  for (int r = 0; r < n; ++r) {
    if (offers[r].disabled != 0) {
      CC_INFO(kSubsysInit,
              "rank %d: Direct algorithm off: COLLCOMM_CMA_DISABLE=1 on rank %d and the ranks span "
              "processes",
              rank, r);
      *out = access;
      return kOk;
    }
  }
  for (int r = 0; r < n; ++r) {
    const ProbeResult& f = results[r];
    if (f.err == 0) continue;
    const int peer = f.peer >= 0 && f.peer < n ? f.peer : 0;
    CC_INFO(kSubsysInit,
            "rank %d: Direct algorithm off: rank %d could not read the memory of rank %d (pid %d) with "
            "process_vm_readv: %s",
            rank, r, peer, offers[peer].pid,
            f.err < 0        ? "it read back a different value (another PID namespace?)"
            : f.err == EPERM ? "Operation not permitted (Yama ptrace_scope, or a container without CAP_SYS_PTRACE)"
                             : strerror(f.err));
    *out = access;
    return kOk;
  }
  access.ok = true;
  *out = access;
  return kOk;
}

}  // namespace collcomm::detail
