// The cost model of host communicators: how long a planned operation takes on this kind of machine,
// from constants measured by a calibration command (perf/calibrate/host_model.sh), not taken from
// NCCL's GPU tables. ccGroupSimulateEnd reports its sum over a group. The planner (plan/tuner.h)
// takes the model's argmin for AllReduce across hosts (hostModelChoice: Ring, OneShot or Tree, and
// the protocol); elsewhere it decides by its measured thresholds, where the model lacks a term
// (docs/planning.md, "Host communicators").
//
// Structure, per link class (threads of one process, processes on one host, NET) and protocol:
//   time = per-operation cost + hand-offs x hand-off latency + further FIFO steps x step cost
//          + bytes through one rank / throughput
// with the hand-offs, the steps and the bytes per rank of each algorithm as the algorithm moves
// them (host_model.cc): a hand-off carries one step, and a slice larger than the protocol's step
// payload (the plan's stepBytes, what the ring's connections agreed on) takes further steps. Each
// throughput is one of two: the message's size decides whether it fits in cache
// (kHostModelCacheSplitBytes). The constants are fitted on two ranks; more ranks extrapolate by
// that structure.
//
// Setup/control tier: plain arithmetic, no allocation.
#pragma once

#include <cstddef>

#include "plan/plan.h"

namespace collcomm::detail {

// The slowest kind of link a communicator's operations cross.
enum class HostLinkClass : int { kThreads = 0, kProcesses = 1, kNet = 2 };
inline constexpr int kHostLinkClassCount = 3;
const char* hostLinkClassName(HostLinkClass c);

// What the communicator's shape says: NET when any connection is NET, threads when every rank is
// a thread of one process, processes otherwise.
HostLinkClass hostLinkClassOf(const PlanShape& shape);

// Where a message stops fitting in cache, for the model: the stream threshold
// (TunerConfig::defaultStreamThreshold, half the last-level cache) of the machine the constants
// were fitted on, whose 32 MiB L3 gives 16 MiB. A constant rather than this machine's threshold, so
// every rank of a communicator that spans hosts estimates alike and chooses alike.
inline constexpr size_t kHostModelCacheSplitBytes = size_t{16} << 20;

// A throughput in bytes per us (MB/s) for messages below kHostModelCacheSplitBytes and for
// messages from it up: beyond the cache every byte comes from memory, 1.5-2.5x slower here.
struct HostRate {
  double inCache;
  double outOfCache;
  double at(double messageBytes) const {
    return messageBytes < static_cast<double>(kHostModelCacheSplitBytes) ? inCache : outOfCache;
  }
};

// Measured constants of one link class (us, and bytes per us = MB/s).
struct HostLinkConstants {
  double opUs;             // per operation: API, plan, waking the executor, the final wait
  double hopUs[2];         // one hand-off of a FIFO step to the next rank (Simple, LL)
  double stepUs[2];        // one further step of a slice, pipelined behind the hand-off (Simple, LL)
  HostRate bytesPerUs[2];  // one rank's ring throughput: receive, reduce or copy, forward (Simple, LL)
  HostRate oneShotBytesPerUs;  // two-rank one-shot AllReduce: one input sent, two reduced
  HostRate directBytesPerUs;   // Direct: bytes copied out of a peer's buffer (0: not measured there)
  HostRate p2pBytesPerUs;      // Send/Recv: one peer's bytes through a point-to-point connection
};

// The model's estimate of `plan` on a communicator whose links are of class `c`, in us.
double hostEstimateUs(const Plan& plan, HostLinkClass c);
// The same for a collective of `bytes` (as Plan::bytes counts them) on `nranks` ranks run with
// `algo` and `proto` in FIFO steps of `stepBytes` (Plan::stepBytes; 0: unknown, no step term):
// what hostEstimateUs reads of a plan.
double hostEstimateCollUs(CollKind kind, Algorithm algo, Protocol proto, size_t bytes, int nranks, HostLinkClass c,
                          size_t stepBytes = 0);

// FIFO steps one rank sends beyond the one each of the algorithm's hand-offs carries, for `bytes`
// cut as Primitives cut them (kChunkSteps steps of `stepBytes` a chunk, collectives/coll_work.h);
// none where the algorithm moves no ring steps (Direct, OneShot on more than two ranks) or
// stepBytes is 0.
double hostFurtherSteps(CollKind kind, Algorithm algo, size_t bytes, int nranks, size_t stepBytes);

// The step payloads of a communicator's ring connections per protocol (PlanShape's; 0: unknown).
struct HostStepBytes {
  size_t simple = 0;
  size_t ll = 0;
};

// The algorithm and protocol of least estimated time for `kind`, among those the host executor runs
// for it without reading peers' memory: Ring; for AllReduce on more than two ranks also OneShot and
// Tree (on two the tree is the ring's two hops with more bytes, and one-shot's crossing is the
// tuner's measured one); Simple and LL. forcedAlgo / forcedProto (an Algorithm / Protocol value, -1:
// choose) narrow the search to that one; `steps` are the ring's step payloads the estimates count
// further steps with. A tie keeps the first of Ring, OneShot, Tree, then of Simple, LL.
struct HostModelChoice {
  Algorithm algo;
  Protocol proto;
};
HostModelChoice hostModelChoice(CollKind kind, size_t bytes, int nranks, HostLinkClass c, int forcedAlgo = -1,
                                int forcedProto = -1, HostStepBytes steps = {});

// A batch of point-to-point transfers (Send, Recv, and AlltoAll, Gather, Scatter made of them), run
// at once: the bytes this rank sends to and receives from its peers, all of the batch's transfers.
double hostEstimateP2pUs(size_t sendBytes, size_t recvBytes, HostLinkClass c);

// The constants in use for `c` (for tools and tests).
const HostLinkConstants& hostLinkConstants(HostLinkClass c);

}  // namespace collcomm::detail
