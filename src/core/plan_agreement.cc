// The settings, channels and GPU model every rank of a communicator plans with (plan_agreement.h).
#include "core/plan_agreement.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {
namespace {

// The variables a rank's plans follow: two ranks that read different values would choose
// different algorithms, protocols, rings or point-to-point rounds for one operation. The others
// only change how a rank does its own part (streaming stores, spinning, SIMD), or are agreed by
// their own exchange (COLLCOMM_BUFFSIZE: init.cc agreeRingStep; Direct's reach: cma_probe.h).
constexpr std::array kPlanParams = {Param::kAlgo,        Param::kProto,           Param::kOneshotThreshold,
                                    Param::kLlThreshold, Param::kDirectThreshold, Param::kP2pMaxTransfers,
                                    Param::kRingOrder};
constexpr size_t kValueBytes = 32;  // a number or a word; longer text is cut, which only weakens the check

struct RankInputs {
  char values[kPlanParams.size()][kValueBytes];  // as this rank reads them (compared ignoring case)
  char set[kPlanParams.size()];                  // 1: the user set it (the sentence says "unset" otherwise)
  int32_t channelsWanted;
  uint64_t gpuModelDigest;  // 0: no model
};

std::string valueOf(Param p) { return paramInfo(p).isInt ? std::to_string(paramInt(p)) : paramStr(p); }

uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;  // FNV-1a
  return h;
}

template <typename T>
uint64_t bitsOf(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(v));
  return b;
}

// Everything of the model the planner reads, field by field (no padding bytes).
uint64_t gpuModelDigest(const ccComm& comm) {
  if (!comm.gpuModel) return 0;
  const RingGraph& g = *comm.gpuModel;
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : {bitsOf(g.nRanks), bitsOf(g.nNodes), bitsOf(g.intraHop), bitsOf(g.gen), bitsOf(g.maxChannels),
                     bitsOf(g.bwPerChannel), bitsOf(g.amdCpu), bitsOf(g.netLatencyUs)})
    h = mix(h, v);
  for (int r : comm.gpuRingRanks) h = mix(h, static_cast<uint64_t>(r));
  return h | 1;  // never 0, which means "no model"
}

std::string shown(const RankInputs& in, size_t i) {
  const std::string name = paramInfo(kPlanParams[i]).name;
  return in.set[i] ? name + "=" + in.values[i] : name + " unset";
}

}  // namespace

Status agreeOnPlan(ccComm* comm, int channelsWanted, Deadline deadline, int* channels) {
  std::vector<RankInputs> all(comm->nranks);
  RankInputs& mine = all[comm->rank];
  std::memset(&mine, 0, sizeof(mine));
  for (size_t i = 0; i < kPlanParams.size(); ++i) {
    std::snprintf(mine.values[i], kValueBytes, "%s", valueOf(kPlanParams[i]).c_str());
    mine.set[i] = paramIsSet(kPlanParams[i]) ? 1 : 0;
  }
  mine.channelsWanted = channelsWanted;
  mine.gpuModelDigest = gpuModelDigest(*comm);
  if (comm->nranks > 1) CC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(RankInputs), deadline));

  // Every rank compares every rank with rank 0, so all of them fail with the same sentence.
  const RankInputs& first = all[0];
  for (int r = 1; r < comm->nranks; ++r)
    for (size_t i = 0; i < kPlanParams.size(); ++i)
      if (strncasecmp(first.values[i], all[r].values[i], kValueBytes) != 0)
        return CC_ERROR(Status::kInvalidUsage,
                        "rank 0 (host %s) was given %s and rank %d (host %s) %s: every rank of a communicator must "
                        "plan with the same %s (ranks that plan one operation differently cannot run it together)",
                        comm->peers[0].host, shown(first, i).c_str(), r, comm->peers[r].host, shown(all[r], i).c_str(),
                        paramInfo(kPlanParams[i]).name);

  *channels = channelsWanted;
  for (const RankInputs& in : all) *channels = std::min<int>(*channels, in.channelsWanted);
  if (*channels < channelsWanted)
    CC_INFO(kSubsysInit, "rank %d: %d channel(s), the least any rank wants (this rank wants %d)", comm->rank, *channels,
            channelsWanted);

  for (int r = 1; r < comm->nranks; ++r)
    if (all[r].gpuModelDigest != first.gpuModelDigest) {
      if (comm->gpuModel)
        CC_INFO(kSubsysInit,
                "rank %d: the GPU planner keeps its fixed choices: rank %d's topology gives other rings than rank "
                "0's",
                comm->rank, r);
      comm->gpuModel.reset();
      comm->gpuRingRanks.clear();
      break;
    }
  return kOk;
}

}  // namespace collcomm::detail
