// Conformance with ranks as threads of one process (in-process P2P transport, SHM when P2P is
// disabled, NET over sockets when both are): every collective, dtype, op, count, placement and
// several roots, bit for bit.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/coll_check.h"
#include "support/plan_rings.h"
#include "support/net_plugins.h"
#include "support/ofi_provider.h"
#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

struct SweepParam {
  int nranks;
  const char* proto;           // COLLCOMM_PROTO, "" for the planner's choice
  bool shm;                    // COLLCOMM_P2P_DISABLE=1
  bool net = false;            // and COLLCOMM_SHM_DISABLE=1: every byte crosses sockets
  const char* algo = "";       // COLLCOMM_ALGO
  bool streamAll = false;      // COLLCOMM_STREAM_THRESHOLD=0: every result by streaming stores
  const char* ringOrder = "";  // COLLCOMM_RING_ORDER, "" for the default (plan/rings.h)
  bool ofi = false;            // with net: COLLCOMM_NET=ofi over libfabric's tcp provider
  const char* plugin = "";     // with net: COLLCOMM_NET_PLUGIN (support/net_plugins.h: socket, ofi, nccl, nccl9)
};

class ThreadSweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(ThreadSweep, EveryCollectiveExact) {
  const SweepParam p = GetParam();
  if (p.ofi) CC_REQUIRE_OFI_PROVIDER("tcp");
  Watchdog dog(300, "thread sweep");
  if (p.plugin[0] != '\0') setenv("COLLCOMM_NET_PLUGIN", testNetPlugin(p.plugin).c_str(), 1);
  if (p.ofi) {
    setenv("COLLCOMM_NET", "ofi", 1);
    setenv("COLLCOMM_OFI_PROVIDER", "tcp", 1);
  }
  setenv("COLLCOMM_PROTO", p.proto, 1);
  setenv("COLLCOMM_P2P_DISABLE", p.shm || p.net ? "1" : "0", 1);
  setenv("COLLCOMM_SHM_DISABLE", p.net ? "1" : "0", 1);
  setenv("COLLCOMM_TIMEOUT", "60", 1);
  setenv("COLLCOMM_ALGO", p.algo, 1);
  setenv("COLLCOMM_STREAM_THRESHOLD", p.streamAll ? "0" : "-1", 1);
  if (p.ringOrder[0] != '\0') setenv("COLLCOMM_RING_ORDER", p.ringOrder, 1);
  ThreadRanks ranks(p.nranks);
  unsetenv("COLLCOMM_RING_ORDER");
  unsetenv("COLLCOMM_PROTO");
  unsetenv("COLLCOMM_P2P_DISABLE");
  unsetenv("COLLCOMM_SHM_DISABLE");
  unsetenv("COLLCOMM_ALGO");
  unsetenv("COLLCOMM_STREAM_THRESHOLD");
  unsetenv("COLLCOMM_NET");
  unsetenv("COLLCOMM_OFI_PROVIDER");
  unsetenv("COLLCOMM_NET_PLUGIN");
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  const auto cases = conformanceCases(p.nranks, p.proto[0] == '\0' && p.nranks <= 4);
  ranks.run([&](int rank, ccComm_t comm) {
    if (std::string(p.ringOrder) == "reverse" && p.nranks > 1) {
      // The sweep runs on the rings the plan shows: one host, so the identity backwards.
      std::vector<int> reversed;
      for (int r = p.nranks - 1; r >= 0; --r) reversed.push_back(r);
      const std::string json = allReducePlanJson(comm, size_t{4} << 20);
      const auto rings = ringsOfPlanJson(json);
      // (Direct, which the planner may take at this size in one process, runs on no rings.)
      if (rings.empty() && std::string(p.algo) == "Ring")
        return ranks.fail("rank " + std::to_string(rank) + ": a Ring plan on no rings: " + json);
      for (const auto& ring : rings)
        if (ring != reversed) return ranks.fail("rank " + std::to_string(rank) + ": not the reversed ring: " + json);
    }
    if (std::string(p.algo) == "Tree" && p.nranks > 1) {
      // The plan says Tree and shows the trees (each rank's parent per channel, one root).
      const std::string json = allReducePlanJson(comm, 1001);
      if (json.find("\"algorithm\":\"Tree\"") == std::string::npos ||
          json.find("\"on_trees\":true") == std::string::npos || json.find("\"parents\":[-1,") == std::string::npos)
        return ranks.fail("rank " + std::to_string(rank) + ": not a tree plan: " + json);
    }
    for (const CaseSpec& c : cases) {
      std::string f = runCase(comm, rank, p.nranks, c);
      if (!f.empty()) {
        ranks.fail(f);
        return;
      }
    }
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadSweep,
                         ::testing::Values(SweepParam{1, "", false}, SweepParam{2, "", false},
                                           SweepParam{3, "", false}, SweepParam{4, "", false},
                                           SweepParam{5, "", false}, SweepParam{7, "", false},
                                           SweepParam{8, "", false}, SweepParam{2, "Simple", false},
                                           SweepParam{3, "LL", false}, SweepParam{4, "Simple", true},
                                           SweepParam{3, "LL", true}, SweepParam{2, "", false, true},
                                           SweepParam{3, "", false, true}, SweepParam{4, "Simple", false, true},
                                           SweepParam{3, "LL", false, true}, SweepParam{5, "", false, true},
                                           // One-shot AllReduce (two ranks over the ring connections,
                                           // more over per-peer ones), results by streaming stores.
                                           SweepParam{2, "", false, false, "OneShot"},
                                           SweepParam{2, "LL", false, false, "OneShot"},
                                           SweepParam{2, "", true, false, "OneShot"},
                                           SweepParam{3, "", false, false, "OneShot"},
                                           SweepParam{5, "", true, false, "OneShot"},
                                           SweepParam{3, "", false, true, "OneShot"},
                                           // Direct (single-copy reads of the peers' buffers): every
                                           // collective that has it, the rest as planned.
                                           SweepParam{2, "", false, false, "Direct"},
                                           SweepParam{3, "", false, false, "Direct"},
                                           SweepParam{4, "", true, false, "Direct"},
                                           SweepParam{5, "", false, false, "Direct", true},
                                           SweepParam{2, "", false, false, "Ring", true},
                                           SweepParam{3, "Simple", true, false, "", true},
                                           // Rings that are not the identity (COLLCOMM_RING_ORDER=
                                           // reverse): every ring consumer (block placement, roots'
                                           // positions, one-shot on two ranks) on P2P, SHM and NET.
                                           SweepParam{2, "", false, false, "", false, "reverse"},
                                           SweepParam{2, "", false, false, "OneShot", false, "reverse"},
                                           SweepParam{3, "LL", false, false, "", false, "reverse"},
                                           SweepParam{4, "", false, false, "Ring", false, "reverse"},
                                           SweepParam{5, "Simple", true, false, "", false, "reverse"},
                                           SweepParam{3, "", false, true, "", false, "reverse"},
                                           // Tree AllReduce (one host: each channel's tree is the
                                           // chain of the ranks in ring order; plan/trees.h), the
                                           // other collectives on rings: odd rank counts, both
                                           // protocols, P2P, SHM and NET, two channels.
                                           SweepParam{2, "", false, false, "Tree"},
                                           SweepParam{3, "", false, false, "Tree"},
                                           SweepParam{4, "LL", false, false, "Tree"},
                                           SweepParam{5, "Simple", true, false, "Tree"},
                                           SweepParam{7, "", false, false, "Tree"},
                                           SweepParam{8, "", false, false, "Tree", true},
                                           SweepParam{3, "", false, true, "Tree"},
                                           SweepParam{4, "", false, false, "Tree", false, "reverse"},
                                           // NET over libfabric's tcp provider (COLLCOMM_NET=ofi).
                                           SweepParam{2, "", false, true, "", false, "", true},
                                           SweepParam{3, "LL", false, true, "", false, "", true},
                                           SweepParam{4, "Simple", false, true, "", false, "", true},
                                           SweepParam{3, "", false, true, "OneShot", false, "", true},
                                           // NET over net plugins (COLLCOMM_NET_PLUGIN): the in-tree
                                           // socket and OFI backends built as plugins of the public
                                           // ABI, and our NCCL layout plugin (v8, v9).
                                           SweepParam{2, "", false, true, "", false, "", false, "socket"},
                                           SweepParam{3, "LL", false, true, "", false, "", false, "socket"},
                                           SweepParam{4, "Simple", false, true, "", false, "", false, "socket"},
                                           SweepParam{3, "", false, true, "", false, "", true, "ofi"},
                                           SweepParam{2, "", false, true, "", false, "", false, "nccl"},
                                           SweepParam{3, "LL", false, true, "", false, "", false, "nccl"},
                                           SweepParam{4, "Simple", false, true, "", false, "", false, "nccl"},
                                           SweepParam{3, "", false, true, "OneShot", false, "", false, "nccl"},
                                           SweepParam{2, "", false, true, "", false, "", false, "nccl9"},
                                           SweepParam{3, "LL", false, true, "", false, "", false, "nccl9"}),
                         [](const ::testing::TestParamInfo<SweepParam>& info) {
                           return std::to_string(info.param.nranks) + "ranks" +
                                  (info.param.proto[0] ? std::string("_") + info.param.proto : std::string("")) +
                                  (info.param.shm ? "_shm" : "") + (info.param.net ? "_net" : "") +
                                  (info.param.ofi ? "_ofi" : "") +
                                  (info.param.plugin[0] ? std::string("_plugin_") + info.param.plugin : "") +
                                  (info.param.algo[0] ? std::string("_") + info.param.algo : std::string("")) +
                                  (info.param.streamAll ? "_stream" : "") +
                                  (info.param.ringOrder[0] ? std::string("_") + info.param.ringOrder : "");
                         });

}  // namespace
}  // namespace collcomm::test
