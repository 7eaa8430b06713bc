// Communicator creation: bootstrap, peer exchange, ring planning and connection, INFO summary.
#include "core/init.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/asymmetric_fence.h"
#include "common/futex.h"
#include "common/log.h"
#include "common/params.h"
#include "core/gpu_job.h"
#include "core/gpu_model.h"
#include "core/peer_info.h"
#include "core/plan_agreement.h"
#include "plan/rings.h"
#include "plan/trees.h"
#include "proxy/proxy.h"
#include "transport/cma/cma_probe.h"
#include "transport/connect.h"

namespace collcomm::detail {
namespace {

constexpr uint64_t kRingTagBase = 0x52494e4700000000ull;  // "RING" + channel

int configInt(int value, int fallback) { return value == CC_CONFIG_UNDEF_INT ? fallback : value; }

}  // namespace

FifoSizes fifoSizesFromParams() {
  FifoSizes s{};
  int64_t buff = std::max<int64_t>(paramInt(Param::kBuffsize), kNumSteps * 4096);
  s.ring.simpleStepBytes = static_cast<size_t>(buff / kNumSteps) / 64 * 64;
  int64_t llBuff = std::max<int64_t>(paramInt(Param::kLlBuffsize), kNumSteps * 64 * sizeof(uint64_t));
  size_t lines = static_cast<size_t>(llBuff) / kNumSteps / sizeof(uint64_t);
  s.ring.llStepLines = std::min(lines, kMaxLlStepPayload / kLlBytesPerLine) / kLlStepAlignLines * kLlStepAlignLines;
  s.p2p.simpleStepBytes = s.ring.simpleStepBytes;
  s.p2p.llStepLines = 0;
  s.oneShot.simpleStepBytes = std::min<size_t>(s.ring.simpleStepBytes, 16384);
  s.oneShot.llStepLines = 0;
  return s;
}

namespace {

Status exchangePeerInfo(ccComm* comm, Deadline deadline) {
  comm->peers.assign(comm->nranks, PeerInfo{});
  comm->peers[comm->rank] = localPeerInfo(comm->rank, comm->config.device);
  CC_CHECK(comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo), deadline));
  for (int r = 0; r < comm->nranks; ++r) {
    PeerInfo& p = comm->peers[r];
    p.host[sizeof(p.host) - 1] = '\0';
    if (p.rank != r) return CC_ERROR(Status::kInternalError, "peer information of rank %d arrived in slot %d", p.rank, r);
  }
  return kOk;
}

Status connectRings(ccComm* comm, int nChannels, Deadline deadline) {
  // Every rank plans the rings alone, from what all of them know: they must plan alike, or their
  // connections would wait for each other until the deadline (the ring order: agreeOnPlan).
  std::vector<RankPlace> places;
  for (const PeerInfo& p : comm->peers) places.push_back({p.hostHash, p.processToken});
  comm->channels.resize(nChannels);
  std::vector<std::vector<int>> rings = planRings(places, nChannels, ringOrderFromParams(), comm->gpuRingRanks);
  comm->trees = planTrees(places, nChannels);  // connected on first use (core/tree_conns.h)
  std::vector<ConnectRequest> requests;
  for (int c = 0; c < nChannels; ++c) {
    Channel& ch = comm->channels[c];
    ch.id = c;
    ch.ringRanks = std::move(rings[c]);
    ch.ringPos =
        static_cast<int>(std::find(ch.ringRanks.begin(), ch.ringRanks.end(), comm->rank) - ch.ringRanks.begin());
    if (comm->nranks == 1) continue;
    const int next = ch.ringRanks[(ch.ringPos + 1) % comm->nranks];
    const int prev = ch.ringRanks[(ch.ringPos + comm->nranks - 1) % comm->nranks];
    requests.push_back(
        {prev, false, kRingTagBase + c, comm->fifoSizes.ring, nullptr, &ch.recv, &ch.recvMem, &ch.recvTransport});
    requests.push_back(
        {next, true, kRingTagBase + c, comm->fifoSizes.ring, &ch.send, nullptr, &ch.sendMem, &ch.sendTransport});
  }
  CC_CHECK(connectPeers(*comm->bootstrap, comm->peers, comm->rank, comm->connSetup(deadline), requests));
  for (const ConnectRequest& r : requests) comm->usesNet |= *r.transportName == kNetTransportName;
  return kOk;
}

// Every rank must cut a ring's data into steps of one size (Primitives take the smaller of their
// two connections' steps), but a connection may carry less than its slot (NET: whole network
// segments, transport.h stepMaxBytes) and ranks may differ in COLLCOMM_BUFFSIZE or
// COLLCOMM_LL_BUFFSIZE: each ring takes the smallest Simple and LL step any rank's ring connection
// takes. A smaller LL step than the FIFO was laid out for is safe: room is checked for the step's
// size, and the NET proxy checks for the layout's (larger) one.
Status agreeRingStep(ccComm* comm, Deadline deadline) {
  if (comm->nranks == 1) return kOk;
  struct Steps {
    uint64_t simpleBytes;
    uint64_t llLines;
  };
  Steps mine{comm->fifoSizes.ring.simpleStepBytes, comm->fifoSizes.ring.llStepLines};
  for (const Channel& ch : comm->channels) {
    mine.simpleBytes = std::min<uint64_t>({mine.simpleBytes, ch.send.simpleStepMax, ch.recv.simpleStepMax});
    mine.llLines = std::min<uint64_t>({mine.llLines, ch.send.llStepLines, ch.recv.llStepLines});
  }
  std::vector<Steps> all(comm->nranks);
  all[comm->rank] = mine;
  CC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Steps), deadline));
  Steps ring = mine;
  for (const Steps& s : all) {
    ring.simpleBytes = std::min(ring.simpleBytes, s.simpleBytes);
    ring.llLines = std::min(ring.llLines, s.llLines);
  }
  for (Channel& ch : comm->channels) {
    ch.send.simpleStepMax = ch.recv.simpleStepMax = static_cast<uint32_t>(ring.simpleBytes);
    ch.send.llStepLines = ch.recv.llStepLines = static_cast<uint32_t>(ring.llLines);
  }
  return kOk;
}

// Every GPU rank plans channels within its executor's cap, which each works out alone (its GPU's
// SMs, the ranks sharing it, the fused launch's share): the ranks agree on the least of them, or
// ranks with different GPUs (or MPS limits) would plan different channel counts for one collective.
Status agreeGpuChannels(ccComm* comm, Deadline deadline) {
  std::vector<int32_t> caps(comm->nranks);
  caps[comm->rank] = comm->executor->maxChannels();
  if (comm->nranks > 1) CC_CHECK(comm->bootstrap->allGather(caps.data(), sizeof(int32_t), deadline));
  comm->gpuChannelCap = *std::min_element(caps.begin(), caps.end());
  if (comm->gpuChannelCap != caps[comm->rank])
    CC_INFO(kSubsysInit, "rank %d: %d channel(s) a collective, the least of the ranks' (this rank's GPU holds %d)",
            comm->rank, comm->gpuChannelCap, caps[comm->rank]);
  return kOk;
}

// What the communicator's executor is made from: everything it needs for its whole life, so that
// core hands it only operations.
ExecSetup executorSetup(ccComm* comm) {
  ExecSetup setup{};
  setup.device = comm->config.device;
  setup.rank = comm->rank;
  setup.nranks = comm->nranks;
  setup.timeoutSeconds = comm->config.timeoutSeconds;
  setup.mostRanksOnADevice = comm->mostRanksOnADevice;
  const PeerInfo& me = comm->peers[comm->rank];
  for (int r = 0; r < comm->nranks; ++r)
    if (comm->peers[r].processToken == me.processToken && comm->peers[r].device == me.device)
      setup.deviceMates.push_back(r);
  setup.commId = comm->peers[0].commNonce;  // the same on every rank, and this communicator's alone
  for (Channel& ch : comm->channels) setup.channels.push_back({&ch.send, &ch.recv, ch.ringRanks.data(), ch.ringPos});
  setup.netOpsRunning = &comm->netOpsRunning;
  setup.abortFlag = &comm->abortFlag;
  setup.hostNames = comm->hostNames.data();
  for (const PeerInfo& p : comm->peers)
    setup.peers.push_back({p.pid, p.processToken == me.processToken, samePidSpace(me, p)});
  if (const int64_t perRun = paramInt(Param::kP2pMaxTransfers); perRun > 0)
    setup.maxTransfersPerRun = static_cast<size_t>(std::max<int64_t>(perRun, 2));  // a send and a receive
  setup.spinCount = comm->spinCount;
  setup.netSpinCount = comm->netSpinCount;
  // Waits may sleep only where every process's publishers are covered by the parking fence; every
  // process of the job registers here, before its first operation.
  const int64_t parkAfterUs = paramInt(Param::kParkAfterUs);
  setup.parkAfterNs = parkAfterUs > 0 && parkingFenceReady() ? parkAfterUs * 1000 : 0;
  setup.progress = proxyRoundHere;
  setup.sendNow = proxySendsHere;
  setup.sendNowMinBytes = comm->tuner.sendNowThreshold;
  return setup;
}

// The connections of the collectives that talk to every peer (ccComm::peerConns).
void makePeerConns(ccComm* comm) {
  comm->peerConns.assign(comm->nranks, ExecPeerConn{nullptr, nullptr});
  for (int p = 0; p < comm->nranks; ++p) {
    if (p == comm->rank) continue;
    if (comm->nranks == 2 && !comm->channels.empty())
      comm->peerConns[p] = {&comm->channels[0].send, &comm->channels[0].recv};
    else
      comm->peerConns[p] = {&comm->collPeers[p].send, &comm->collPeers[p].recv};
  }
}

void logSummary(const ccComm* comm) {
  if (!logEnabled(LogLevel::kInfo, kSubsysInit)) return;
  const PeerInfo& me = comm->peers[comm->rank];
  const bool ring = comm->nranks > 1 && !comm->channels.empty();  // the steps every rank agreed on
  const size_t simpleStep = ring ? comm->channels[0].send.simpleStepMax : comm->fifoSizes.ring.simpleStepBytes;
  const size_t llStep =
      (ring ? comm->channels[0].send.llStepLines : comm->fifoSizes.ring.llStepLines) * kLlBytesPerLine;
  CC_INFO(kSubsysInit,
          "comm %p%s%s rank %d nranks %d host %s pid %d device %s: %zu channel(s), ring steps of %zu bytes "
          "(LL: %zu), timeout %d s",
          static_cast<const void*>(comm), comm->config.name.empty() ? "" : " name ", comm->config.name.c_str(),
          comm->rank, comm->nranks, me.host, me.pid, me.device >= 0 ? std::to_string(me.device).c_str() : "host",
          comm->channels.size(), simpleStep, llStep, comm->config.timeoutSeconds);
  for (const Channel& ch : comm->channels) {
    if (comm->nranks == 1) break;
    CC_INFO(kSubsysInit, "channel %d: rank %d (%s) -> rank %d via %s; rank %d (%s) -> rank %d via %s", ch.id,
            ch.recv.peer.rank, ch.recv.peer.host, comm->rank, ch.recvTransport, comm->rank, me.host, ch.send.peer.rank,
            ch.sendTransport);
  }
}

}  // namespace

Status checkDevice(int device, const char* what) {
  if (device == CC_DEVICE_HOST) return kOk;
  if (device >= 0) return checkCudaDevice(device, what);
  return CC_ERROR(Status::kInvalidArgument, "%s = %d is neither a CUDA device ordinal (>= 0) nor CC_DEVICE_HOST (%d)",
                  what, device, CC_DEVICE_HOST);
}

Status checkRankArgs(int nranks, int rank) {
  if (nranks < 1) return CC_ERROR(Status::kInvalidArgument, "nranks must be at least 1, not %d", nranks);
  if (rank < 0 || rank >= nranks)
    return CC_ERROR(Status::kInvalidArgument, "rank %d is out of range for nranks %d", rank, nranks);
  return kOk;
}

Status resolveConfig(const ccConfig_t* user, CommConfig* out) {
  CommConfig c;
  c.timeoutSeconds = static_cast<int>(paramInt(Param::kTimeout));
  int64_t minCh = paramInt(Param::kMinNchannels), maxCh = paramInt(Param::kMaxNchannels);
  c.minChannels = minCh > 0 ? static_cast<int>(minCh) : 1;
  c.maxChannels = maxCh > 0 ? static_cast<int>(maxCh) : std::max(1, c.minChannels);
  if (user != nullptr) {
    if (user->magic != CC_CONFIG_MAGIC || user->size < offsetof(ccConfig_t, splitShare))
      return CC_ERROR(Status::kInvalidArgument,
                      "config is not a ccConfig_t initialised with CC_CONFIG_INITIALIZER (bad size or magic)");
    c.blocking = configInt(user->blocking, 1);
    if (c.blocking != 0 && c.blocking != 1)
      return CC_ERROR(Status::kInvalidArgument, "config.blocking must be 0 or 1, not %d", user->blocking);
    c.device = configInt(user->device, CC_DEVICE_HOST);
    if (user->commName != nullptr) c.name = user->commName;
    c.timeoutSeconds = configInt(user->timeout, c.timeoutSeconds);
    c.minChannels = configInt(user->minChannels, c.minChannels);
    c.maxChannels = configInt(user->maxChannels, std::max(c.maxChannels, c.minChannels));
    c.channelsGiven = user->minChannels != CC_CONFIG_UNDEF_INT || user->maxChannels != CC_CONFIG_UNDEF_INT;
  }
  c.channelsGiven = c.channelsGiven || minCh > 0 || maxCh > 0;
  if (c.timeoutSeconds <= 0)
    return CC_ERROR(Status::kInvalidArgument, "the timeout must be a positive number of seconds, not %d",
                    c.timeoutSeconds);
  if (c.minChannels < 1 || c.maxChannels < c.minChannels || c.maxChannels > 64)
    return CC_ERROR(Status::kInvalidArgument, "channel limits must satisfy 1 <= min (%d) <= max (%d) <= 64",
                    c.minChannels, c.maxChannels);
  CC_CHECK(checkDevice(c.device, "config.device"));
  *out = c;
  return kOk;
}

ccComm* newComm(int nranks, int rank, const CommConfig& config) {
  ccComm* comm = new ccComm;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->config = config;
  // Read by ccCommAbort (waitIdle) from any thread, so set before the handle is handed out.
  comm->asymmetricFence = asymmetricFenceReady();
  return comm;
}

namespace {

Status setupSteps(ccComm* comm, const UniqueIdData& id) {
  const int rank = comm->rank, nranks = comm->nranks;
  const CommConfig& config = comm->config;
  logEffectiveParams();
  const Deadline deadline = Deadline::afterSeconds(config.timeoutSeconds);
  ScopedDevice onDevice(config.device);  // a GPU rank's FIFOs are made on its device
  comm->spinCount = static_cast<int>(std::max<int64_t>(0, paramInt(Param::kSpinCount)));
  comm->fifoSizes = fifoSizesFromParams();
  comm->p2p.resize(nranks);
  comm->collPeers.resize(nranks);
  comm->secret[0] = id.secret[0];
  comm->secret[1] = id.secret[1];
  CC_CHECK(loadTunerConfig(&comm->tuner));
  std::unique_ptr<Bootstrap> bootstrap;
  CC_CHECK(Bootstrap::init(id, rank, nranks, deadline, &bootstrap));
  CC_CHECK(comm->adoptBootstrap(std::move(bootstrap)));
  CC_CHECK(exchangePeerInfo(comm, deadline));
  for (const PeerInfo& p : comm->peers) comm->hostNames.push_back(p.host);
  if (hostOversubscribed(comm->peers, rank)) {
    tuneForOversubscribedHost(&comm->tuner);
    if (!paramIsSet(Param::kSpinCount)) {
      comm->spinCount = 0;
      CC_INFO(kSubsysInit, "rank %d: more ranks on this host than CPUs to run them; waits yield at once", rank);
    }
  }
  comm->netSpinCount = comm->spinCount;
  if (!paramIsSet(Param::kSpinCount) && hostOversubscribed(comm->peers, rank, /*threadsPerProcess=*/1))
    comm->netSpinCount = 0;
  const bool gpu = config.device >= 0;
  // On every rank, host ones included: a job that mixes GPU and host ranks stops here on all of them.
  CC_CHECK(checkGpuJob(comm->peers, rank));
  if (gpu) {
    comm->mostRanksOnADevice = mostRanksOnOneDevice(comm->peers);
    describeGpuRings(comm);
  }
  int nChannels = 0;
  CC_CHECK(agreeOnPlan(
      comm,
      gpu ? gpuChannelsToConnect(config.channelsGiven, config.minChannels, config.maxChannels) : config.minChannels,
      deadline, &nChannels));
  CC_CHECK(connectRings(comm, nChannels, deadline));
  CC_CHECK(agreeRingStep(comm, deadline));
  if (comm->usesNet && comm->netSpinCount != comm->spinCount)
    CC_INFO(kSubsysInit,
            "rank %d: NET in use and this host's ranks and proxy threads outnumber their CPUs; waits yield at once",
            rank);
  makePeerConns(comm);
  if (gpu) {
    // Direct on a GPU communicator reads the peers' buffers through their pointers: ranks of this
    // process on this rank's device (one device: no peer access needed). Ranks on several GPUs
    // would need every pair's peer access first, which is not checked yet, and ranks of other
    // processes their buffers' IPC handles: no Direct there.
    const bool oneProcess = std::all_of(comm->peers.begin(), comm->peers.end(), [&](const PeerInfo& p) {
      return p.processToken == comm->peers[rank].processToken;
    });
    comm->directReach =
        oneProcess && comm->mostRanksOnADevice == comm->nranks ? DirectReach::kInProcess : DirectReach::kNone;
    CC_CHECK(makeCudaExecutor(executorSetup(comm), &comm->executor));
    CC_CHECK(agreeGpuChannels(comm, deadline));
    logSummary(comm);
    return kOk;
  }
  DirectAccess direct;
  CC_CHECK(probeDirectAccess(*comm->bootstrap, comm->peers, rank, deadline, &direct));
  comm->directReach = !direct.ok            ? DirectReach::kNone
                      : direct.crossProcess ? DirectReach::kCrossProcess
                                            : DirectReach::kInProcess;
  CC_CHECK(makeHostExecutor(executorSetup(comm), &comm->executor));
  logSummary(comm);
  return kOk;
}

}  // namespace

Status checkInitialised(const ccComm* comm, const char* call) {
  if (comm->ready.load(std::memory_order_acquire)) return kOk;
  return CC_ERROR(Status::kInvalidUsage,
                  "%s: rank %d's communicator has not finished its initialisation (non-blocking: poll "
                  "ccCommGetAsyncError until it is ccSuccess; if it failed, destroy it)",
                  call, comm->rank);
}

Status commSetup(ccComm* comm, const UniqueIdData& id) {
  CC_CHECK(setupSteps(comm, id));
  comm->ready.store(true, std::memory_order_release);
  return kOk;
}

Status commInit(ccComm** out, int nranks, const UniqueIdData& id, int rank, const CommConfig& config) {
  CC_CHECK(checkRankArgs(nranks, rank));
  ccComm* comm = newComm(nranks, rank, config);
  const Status s = commSetup(comm, id);
  if (!isOk(s)) {
    commFree(comm);
    return s;
  }
  *out = comm;
  return kOk;
}

void commFree(ccComm* comm) {
  if (comm == nullptr) return;
  comm->magic = kCommDeadMagic;
  delete comm;
}

}  // namespace collcomm::detail
