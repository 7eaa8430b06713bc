// Ranks as separate processes on one host, through the driver of worker_job.h: the collective
// sweeps over SHM and NET (sockets, OFI, the net plugins), Direct, point-to-point groups, ring
// steps and orders, trees across "hosts" told apart by COLLCOMM_HOSTID, IPv6 loopback. After each
// job no /dev/shm/collcomm-* segment made by its workers may remain.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "mp/worker_job.h"
#include "support/ipv6_loopback.h"
#include "support/net_plugins.h"
#include "support/ofi_provider.h"
#include "support/plan_rings.h"

namespace collcomm::test {
namespace {

struct SweepParam {
  int nranks;
  const char* proto;           // COLLCOMM_PROTO, "" for the planner's choice
  bool net = false;            // COLLCOMM_SHM_DISABLE=1: the NET transport over loopback sockets
  const char* algo = "";       // COLLCOMM_ALGO
  bool cmaOff = false;         // COLLCOMM_CMA_DISABLE=1
  bool streamSteps = false;    // COLLCOMM_STEP_STREAM=always: every large step through memory
  const char* ringOrder = "";  // COLLCOMM_RING_ORDER, "" for the default (plan/rings.h)
  const char* ofi = "";        // with net: COLLCOMM_NET=ofi over this libfabric provider
  const char* plugin = "";     // with net: COLLCOMM_NET_PLUGIN (support/net_plugins.h: socket, ofi, nccl, nccl9)
};

void PrintTo(const SweepParam& p, std::ostream* os) {
  *os << p.nranks << " ranks, COLLCOMM_PROTO=\"" << p.proto << "\"" << (p.net ? ", NET" : "") << ", COLLCOMM_ALGO=\""
      << p.algo << "\"" << (p.cmaOff ? ", COLLCOMM_CMA_DISABLE=1" : "")
      << (p.streamSteps ? ", COLLCOMM_STEP_STREAM=always" : "")
      << (p.ringOrder[0] ? std::string(", COLLCOMM_RING_ORDER=") + p.ringOrder : "")
      << (p.ofi[0] ? std::string(", COLLCOMM_NET=ofi COLLCOMM_OFI_PROVIDER=") + p.ofi : "")
      << (p.plugin[0] ? std::string(", COLLCOMM_NET_PLUGIN=") + testNetPlugin(p.plugin) : "");
}

class ProcessSweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(ProcessSweep, EveryCollectiveExact) {
  const SweepParam p = GetParam();
  if (p.ofi[0]) CC_REQUIRE_OFI_PROVIDER(p.ofi);
  std::vector<std::string> env = {"COLLCOMM_TIMEOUT=60"};
  if (p.ofi[0]) {
    env.push_back("COLLCOMM_NET=ofi");
    env.push_back(std::string("COLLCOMM_OFI_PROVIDER=") + p.ofi);
  }
  if (p.plugin[0]) env.push_back("COLLCOMM_NET_PLUGIN=" + testNetPlugin(p.plugin));
  if (p.proto[0] != '\0') env.push_back(std::string("COLLCOMM_PROTO=") + p.proto);
  if (p.net) env.push_back("COLLCOMM_SHM_DISABLE=1");
  if (p.algo[0] != '\0') env.push_back(std::string("COLLCOMM_ALGO=") + p.algo);
  if (p.cmaOff) env.push_back("COLLCOMM_CMA_DISABLE=1");
  if (p.streamSteps) env.push_back("COLLCOMM_STEP_STREAM=always");
  if (p.ringOrder[0] != '\0') env.push_back(std::string("COLLCOMM_RING_ORDER=") + p.ringOrder);
  WorkerJob job("sweep", p.nranks, env, kDeadlineSeconds);
  const std::string err = job.run();
  ASSERT_EQ(err, "");
  expectAllSucceeded(job, p.nranks);
  expectNoShmLeft(job);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ProcessSweep,
                         ::testing::Values(SweepParam{2, ""}, SweepParam{3, ""}, SweepParam{4, ""}, SweepParam{2, "LL"},
                                           SweepParam{2, "Simple"}, SweepParam{3, "", true}, SweepParam{2, "LL", true},
                                           // Direct through process_vm_readv, and its fallback.
                                           SweepParam{2, "", false, "Direct"}, SweepParam{3, "", false, "Direct"},
                                           SweepParam{3, "", false, "Direct", true},
                                           // Large steps written with streaming stores (what a far
                                           // peer core gets), on a ring of 2 and of 3.
                                           SweepParam{2, "", false, "", false, true},
                                           SweepParam{3, "", false, "", false, true},
                                           // Rings that are not the identity (COLLCOMM_RING_ORDER=
                                           // reverse), over SHM and NET.
                                           SweepParam{3, "", false, "", false, false, "reverse"},
                                           SweepParam{4, "", false, "Ring", false, false, "reverse"},
                                           SweepParam{3, "", true, "", false, false, "reverse"},
                                           SweepParam{2, "LL", true, "", false, false, "reverse"},
                                           // Tree AllReduce (one host: the chain), over SHM and NET.
                                           SweepParam{2, "", false, "Tree"}, SweepParam{3, "", false, "Tree"},
                                           SweepParam{5, "LL", false, "Tree"}, SweepParam{3, "", true, "Tree"},
                                           // NET over libfabric (COLLCOMM_NET=ofi): its tcp provider,
                                           // and shm (between processes only: see docs/net.md).
                                           SweepParam{3, "", true, "", false, false, "", "tcp"},
                                           SweepParam{2, "LL", true, "", false, false, "", "tcp"},
                                           SweepParam{2, "Simple", true, "", false, false, "", "tcp"},
                                           SweepParam{2, "", true, "", false, false, "", "shm"},
                                           SweepParam{3, "", true, "", false, false, "", "shm"},
                                           // NET over net plugins (COLLCOMM_NET_PLUGIN): the in-tree
                                           // backends as plugins of the public ABI, and our NCCL v8
                                           // layout plugin (v8, v9).
                                           SweepParam{3, "", true, "", false, false, "", "", "socket"},
                                           SweepParam{2, "", true, "", false, false, "", "tcp", "ofi"},
                                           SweepParam{2, "", true, "", false, false, "", "", "nccl"},
                                           SweepParam{3, "", true, "", false, false, "", "", "nccl"},
                                           SweepParam{2, "LL", true, "", false, false, "", "", "nccl"},
                                           SweepParam{3, "", true, "", false, false, "", "", "nccl9"}),
                         [](const ::testing::TestParamInfo<SweepParam>& info) {
                           return std::to_string(info.param.nranks) + "ranks" +
                                  (info.param.proto[0] ? std::string("_") + info.param.proto : std::string("")) +
                                  (info.param.net ? "_net" : "") +
                                  (info.param.algo[0] ? std::string("_") + info.param.algo : std::string("")) +
                                  (info.param.cmaOff ? "_nocma" : "") + (info.param.streamSteps ? "_streamsteps" : "") +
                                  (info.param.ringOrder[0] ? std::string("_") + info.param.ringOrder : "") +
                                  (info.param.ofi[0] ? std::string("_ofi_") + info.param.ofi : std::string("")) +
                                  (info.param.plugin[0] ? std::string("_plugin_") + info.param.plugin : "");
                         });

// Direct between processes really reads with process_vm_readv where the kernel allows it, and
// COLLCOMM_CMA_DISABLE=1 turns it off with one INFO line (the sweeps above check the results).
TEST(ProcessDirect, UsedWhereAllowedAndOffWithCmaDisabled) {
  {
    WorkerJob job(
        "sweep", 2,
        {"COLLCOMM_TIMEOUT=60", "COLLCOMM_ALGO=Direct", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT,TUNING"},
        kDeadlineSeconds);
    ASSERT_EQ(job.run(), "");
    expectAllSucceeded(job, 2);
    const std::string out = job.allOutput();
    if (out.find("Direct algorithm off") != std::string::npos) {
      GTEST_SKIP() << "this host refuses process_vm_readv between the workers:\n"
                   << out.substr(out.find("Direct algorithm off"), 300);
    }
    for (const char* coll : {"AllGather", "Broadcast", "ReduceScatter", "AllReduce"}) {
      bool seen = false;
      for (size_t at = out.find(std::string(coll) + " rank 1:"); at != std::string::npos && !seen;
           at = out.find(std::string(coll) + " rank 1:", at + 1))
        seen = out.compare(out.find("algorithm", at), 16, "algorithm Direct") == 0;
      EXPECT_TRUE(seen) << coll << " never ran Direct between the processes";
    }
  }
  WorkerJob job("sweep", 2,
                {"COLLCOMM_TIMEOUT=60", "COLLCOMM_ALGO=Direct", "COLLCOMM_CMA_DISABLE=1", "COLLCOMM_DEBUG=INFO",
                 "COLLCOMM_DEBUG_SUBSYS=INIT,TUNING"},
                kDeadlineSeconds);
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, 2);
  const std::string out = job.allOutput();
  EXPECT_NE(out.find("Direct algorithm off: COLLCOMM_CMA_DISABLE=1"), std::string::npos) << out.substr(0, 2000);
  EXPECT_EQ(out.find("algorithm Direct"), std::string::npos);
}

class ProcessP2p : public ::testing::TestWithParam<int> {};

TEST_P(ProcessP2p, GroupsAndSplit) {
  const int nranks = GetParam();
  WorkerJob job("p2p", nranks, {"COLLCOMM_TIMEOUT=60"}, kDeadlineSeconds);
  const std::string err = job.run();
  ASSERT_EQ(err, "");
  expectAllSucceeded(job, nranks);
  expectNoShmLeft(job);
}

// Split communicators over NET: a sub-communicator's rank that finishes first destroys it and
// closes its connections while its peer still waits for the last step, which must land anyway
// (once flaky: the receiving proxy dropped a step that arrived together with the close).
TEST(ProcessP2pNet, GroupsAndSplitOverNet) {
  WorkerJob job("p2p", 3, {"COLLCOMM_TIMEOUT=60", "COLLCOMM_SHM_DISABLE=1"}, kDeadlineSeconds);
  const std::string err = job.run();
  ASSERT_EQ(err, "");
  expectAllSucceeded(job, 3);
}

// Every rank of `job` said in its INFO summary that its ring takes steps of `bytes` ("N bytes ...").
void expectRingSteps(const WorkerJob& job, int nranks, const std::string& bytes) {
  for (int r = 0; r < nranks; ++r)
    EXPECT_NE(job.result(r).output.find("channel(s), ring steps of " + bytes), std::string::npos)
        << "rank " << r << " did not take ring steps of " << bytes << " bytes\n"
        << job.allOutput();
}

// Ranks that differ in COLLCOMM_BUFFSIZE and COLLCOMM_LL_BUFFSIZE still cut the ring's data
// identically: each ring takes the smallest step any rank's connections carry (rank 1's 32 KiB
// Simple and 1 KiB LL steps here), with the planner's protocols and with LL forced. Before the
// ranks agreed, rank 2 expected 128 KiB steps from rank 1 and every large operation failed on the
// size check (LL steps have none: they would have waited for lines in the wrong place).
TEST(ProcessRingStep, RanksWithDifferentBuffsizesAgree) {
  for (const char* proto : {"", "LL"}) {
    SCOPED_TRACE(std::string("COLLCOMM_PROTO=") + proto);
    WorkerJob job("sweep", 3,
                  {"COLLCOMM_TIMEOUT=60", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT",
                   std::string("COLLCOMM_PROTO=") + proto},
                  kDeadlineSeconds);
    job.setLauncher(perRankEnv([](int rank) {
      if (rank == 1) return std::vector<std::string>{"COLLCOMM_BUFFSIZE=262144", "COLLCOMM_LL_BUFFSIZE=16384"};
      return std::vector<std::string>{"COLLCOMM_BUFFSIZE=1048576", "COLLCOMM_LL_BUFFSIZE=65536"};
    }));
    ASSERT_EQ(job.run(), "");
    expectAllSucceeded(job, 3);
    expectNoShmLeft(job);
    expectRingSteps(job, 3, "32768 bytes (LL: 1024");
  }
}

// Ranks given different planner settings would choose different algorithms, protocols, rings or
// point-to-point rounds for one operation and wait for each other until COLLCOMM_TIMEOUT (a Direct
// Broadcast against the ring did, blaming the peer): every rank's init fails at once with
// ccInvalidUsage naming the variable and both values (core/plan_agreement.h). Rank 1 differs;
// "unset" stands for a rank that was not given the variable. Values that differ only in case agree.
TEST(ProcessPlanSettings, DifferentSettingsFailInitWithASentence) {
  struct Case {
    const char* name;
    const char* others;  // value on ranks 0 and 2 ("" unset)
    const char* rank1;
    const char* said;  // what the sentence must hold
  };
  for (const Case& c : std::vector<Case>{
           {"COLLCOMM_RING_ORDER", "reverse", "identity", "COLLCOMM_RING_ORDER=reverse and rank 1 (host "},
           {"COLLCOMM_ALGO", "", "Direct", "COLLCOMM_ALGO unset and rank 1 (host "},
           {"COLLCOMM_PROTO", "LL", "Simple", "COLLCOMM_PROTO=LL and rank 1"},
           {"COLLCOMM_LL_THRESHOLD", "", "4096", "COLLCOMM_LL_THRESHOLD unset and rank 1"},
           {"COLLCOMM_ONESHOT_THRESHOLD", "1024", "", "COLLCOMM_ONESHOT_THRESHOLD=1024 and rank 1"},
           {"COLLCOMM_DIRECT_THRESHOLD", "", "0", "COLLCOMM_DIRECT_THRESHOLD unset"},
           {"COLLCOMM_P2P_MAX_TRANSFERS", "4", "6", "COLLCOMM_P2P_MAX_TRANSFERS=4"}}) {
    SCOPED_TRACE(std::string(c.name) + ": '" + c.others + "' against '" + c.rank1 + "' on rank 1");
    WorkerJob job("sweep", 3, {"COLLCOMM_TIMEOUT=60"}, kDeadlineSeconds);
    job.setLauncher(perRankEnv([&c](int rank) {
      const char* value = rank == 1 ? c.rank1 : c.others;
      return value[0] ? std::vector<std::string>{std::string(c.name) + "=" + value} : std::vector<std::string>{};
    }));
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(job.run(), "");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
    for (int r = 0; r < 3; ++r) {
      const WorkerResult& w = job.result(r);
      EXPECT_TRUE(exitedWith(w.status, 1)) << describeStatus(w.status) << "\n" << w.output;
      EXPECT_NE(w.output.find("ccCommInitRank returned"), std::string::npos) << w.output;
      EXPECT_NE(w.output.find(c.said), std::string::npos) << w.output;
      EXPECT_NE(w.output.find(std::string("must plan with the same ") + c.name), std::string::npos) << w.output;
    }
    expectNoShmLeft(job);
  }
}

// What the planner settings' check must let through: values that differ only in their spelling's
// case, and ranks that want different channel counts (their config or COLLCOMM_MIN_NCHANNELS),
// which all connect the least of them (2 here) and run the sweep bit for bit. Before the ranks
// agreed, rank 1's third and fourth rings waited for connections until COLLCOMM_TIMEOUT.
TEST(ProcessPlanSettings, CaseAndChannelCountsAgree) {
  WorkerJob job("sweep", 3, {"COLLCOMM_TIMEOUT=60", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT"},
                kDeadlineSeconds);
  job.setLauncher(perRankEnv([](int rank) {
    return std::vector<std::string>{rank == 1 ? "COLLCOMM_ALGO=ring" : "COLLCOMM_ALGO=Ring",
                                    rank == 1 ? "COLLCOMM_MIN_NCHANNELS=4" : "COLLCOMM_MIN_NCHANNELS=2"};
  }));
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, 3);
  expectNoShmLeft(job);
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(job.result(r).output.find(" 2 channel(s), ring steps of "), std::string::npos) << "rank " << r << "\n"
                                                                                             << job.allOutput();
  EXPECT_NE(job.result(1).output.find("2 channel(s), the least any rank wants (this rank wants 4)"), std::string::npos)
      << job.allOutput();
}

// The tree AllReduce across hosts told apart by COLLCOMM_HOSTID (NET between them over loopback,
// SHM within): rank r on host r % hosts (round-robin, so a host's chain is not in rank order), two
// channels (the double tree's two trees). Every collective of the sweep is exact and each
// channel's tree is the one plan/trees.h draws for the hosts (its INFO lines, wantLines).
void treeSweepAcrossHosts(int nranks, int hosts, const char* proto, const std::vector<std::string>& wantLines) {
  std::vector<std::string> env = {"COLLCOMM_TIMEOUT=60", "COLLCOMM_ALGO=Tree", "COLLCOMM_MIN_NCHANNELS=2",
                                  "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT"};
  if (proto[0] != '\0') env.push_back(std::string("COLLCOMM_PROTO=") + proto);
  WorkerJob job("sweep", nranks, env, kDeadlineSeconds);
  job.setLauncher(perRankEnv(
      [hosts](int rank) { return std::vector<std::string>{"COLLCOMM_HOSTID=host" + std::to_string(rank % hosts)}; }));
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, nranks);
  expectNoShmLeft(job);
  const std::string out = job.allOutput();
  EXPECT_NE(out.find("via NET"), std::string::npos) << out;
  for (const std::string& line : wantLines) EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
}

// Four hosts of one rank: tree 0 - 2 - {1, 3} on channel 0, its mirror 3 - 1 - {2, 0} on channel 1.
TEST(ProcessTree, FourHostsOfOneRank) {
  treeSweepAcrossHosts(4, 4, "",
                       {"tree channel 0: rank 2 parent 0 children 1 3", "tree channel 1: rank 1 parent 3 children 2 0",
                        "tree channel 1: rank 3 parent -1 children 1 -1"});
}
// Three hosts of two ranks, round-robin: chains [0 3] [1 4] [2 5]; host tree 0 - 2 - 1 on channel
// 0, shifted (three hosts: odd) to 1 - 0 - 2 on channel 1.
TEST(ProcessTree, ThreeHostsOfTwoRanksRoundRobin) {
  treeSweepAcrossHosts(
      6, 3, "",
      {"tree channel 0: rank 0 parent -1 children 3 2", "tree channel 0: rank 2 parent 0 children 5 1",
       "tree channel 1: rank 1 parent -1 children 4 0", "tree channel 1: rank 0 parent 1 children 3 2"});
}
// 16 MiB over the four hosts' trees (many chunks through rank 2's two children on channel 0 and
// rank 1's on channel 1), checked exactly by the bench scenario.
TEST(ProcessTree, LargeAllReduceOverFourHosts) {
  WorkerJob job("bench", 4,
                {"COLLCOMM_TIMEOUT=60", "COLLCOMM_ALGO=Tree", "COLLCOMM_MIN_NCHANNELS=2", "CC_MP_BENCH_ITERS=1"},
                kDeadlineSeconds);
  job.setLauncher(
      perRankEnv([](int rank) { return std::vector<std::string>{"COLLCOMM_HOSTID=host" + std::to_string(rank)}; }));
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, 4);
  expectNoShmLeft(job);
}
TEST(ProcessTree, ThreeHostsOfOneRankOverLL) {
  treeSweepAcrossHosts(3, 3, "LL", {"tree channel 0: rank 0 parent -1 children 2 -1"});
}

// A ring that crosses hosts (COLLCOMM_HOSTID: ranks 0 and 1 share one, over SHM; rank 2 is
// alone, over NET) takes the NET connections' whole-segment steps on its SHM link too, and every
// collective stays exact. On loopback (MTU 65536) two full segments hold 130944 bytes of a message
// and its 16-byte header, where a whole 128 KiB slot left 122 bytes for a third: a step carries
// 130880 bytes, the most that leaves room for the 8-byte size word behind it (device/call_tag.h).
TEST(ProcessRingStep, NetAndShmInOneRingTakeWholeSegmentSteps) {
  WorkerJob job("sweep", 3, {"COLLCOMM_TIMEOUT=60", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT"},
                kDeadlineSeconds);
  job.setLauncher(perRankEnv(
      [](int rank) { return std::vector<std::string>{rank < 2 ? "COLLCOMM_HOSTID=hostA" : "COLLCOMM_HOSTID=hostB"}; }));
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, 3);
  expectNoShmLeft(job);
  const std::string out = job.allOutput();
  EXPECT_NE(out.find("via SHM"), std::string::npos) << out;
  EXPECT_NE(out.find("via NET"), std::string::npos) << out;
  expectRingSteps(job, 3, "130880 bytes");
}

// The sweep (every collective, allreduce among them) over NET on IPv6 loopback:
// COLLCOMM_SOCKET_IFNAME==lo COLLCOMM_SOCKET_FAMILY=AF_INET6 for the workers and for this driver,
// whose ccGetUniqueId starts the rendezvous root. Every worker's log must show the bootstrap and
// the NET device on ::1 and its ring over NET.
TEST(ProcessNetIpv6, SweepOverIpv6Loopback) {
  if (const std::string why = test::ipv6LoopbackUnavailable(); !why.empty()) GTEST_SKIP() << why;
  struct DriverEnv {
    DriverEnv() {
      setenv("COLLCOMM_SOCKET_IFNAME", "=lo", 1);
      setenv("COLLCOMM_SOCKET_FAMILY", "AF_INET6", 1);
    }
    ~DriverEnv() {
      unsetenv("COLLCOMM_SOCKET_IFNAME");
      unsetenv("COLLCOMM_SOCKET_FAMILY");
    }
  } driverEnv;
  const int nranks = 2;
  WorkerJob job("sweep", nranks,
                {"COLLCOMM_TIMEOUT=60", "COLLCOMM_SHM_DISABLE=1", "COLLCOMM_SOCKET_IFNAME==lo",
                 "COLLCOMM_SOCKET_FAMILY=AF_INET6", "COLLCOMM_DEBUG=INFO", "COLLCOMM_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET"},
                kDeadlineSeconds);
  const std::string err = job.run();
  ASSERT_EQ(err, "");
  expectAllSucceeded(job, nranks);
  for (int r = 0; r < nranks; ++r) {
    const std::string& out = job.result(r).output;
    EXPECT_NE(out.find("socket interface lo ::1"), std::string::npos) << "rank " << r << "'s bootstrap is not on ::1\n"
                                                                      << out;
    EXPECT_NE(out.find("net/socket: device 0 is lo ::1"), std::string::npos)
        << "rank " << r << "'s NET device is not ::1\n"
        << out;
    EXPECT_NE(out.find(" via NET"), std::string::npos) << "rank " << r << " did not connect over NET\n" << out;
    EXPECT_EQ(out.find("127.0.0.1"), std::string::npos) << "rank " << r << " used IPv4 loopback\n" << out;
  }
  expectNoShmLeft(job);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ProcessP2p, ::testing::Values(2, 3, 4), [](const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
});

}  // namespace
}  // namespace collcomm::test
