// cc-plan --host: a host communicator's collective, per size, as the library plans and estimates
// it: planFor (plan/plan.h, the planner's choice) and hostEstimateUs (plan/host_model.h) on a
// communicator shape made from the command line, what ccGroupSimulateEnd runs, so the tool holds
// no copy of the model or of the tuner's thresholds. With byModel the row is instead the model's
// argmin over every algorithm and protocol the planner runs there when forced (what
// perf/calibrate/host_model_choices.py sets against measured times).
#pragma once

#include <cstddef>

#include "collcomm.h"
#include "collectives/coll_list.h"

namespace collcomm::detail {

struct HostPlanJob {
  int ranks = 2;
  int hosts = 1;           // above one: the rank planned is one whose ring crosses the network (NET)
  bool processes = false;  // one host: ranks are processes (else threads of one process)
  int cpus = 0;            // CPUs a host has for its ranks; 0: one per rank (fewer: oversubscribed)
  CollKind kind = CollKind::kAllReduce;
  const char* opName = "allreduce";
  ccDataType_t dtype = ccFloat;
  const char* typeName = "float";
  int algo = -1;               // an Algorithm value; -1: the planner's (or the model's) choice
  int proto = -1;              // a Protocol value; -1: likewise
  int channels = -1;           // -1: as a communicator connects them (COLLCOMM_MIN_NCHANNELS)
  size_t simpleStepBytes = 0;  // the ring's Simple step; 0: the FIFO's (COLLCOMM_BUFFSIZE)
  size_t llStepBytes = 0;      // the ring's LL step; 0: the FIFO's (COLLCOMM_LL_BUFFSIZE)
  bool byModel = false;
  size_t minBytes = 8;
  size_t maxBytes = size_t{16} << 30;
  size_t factor = 2;
  bool json = false;
};

// Prints the header and one row per size (nccl-tests' columns, or JSON lines). Returns the exit
// status: 2, with a sentence, when the planner does not run the forced algorithm or protocol for
// this job; 1 when the environment's COLLCOMM_* settings are malformed.
int printHostPlan(const HostPlanJob& job);

}  // namespace collcomm::detail
