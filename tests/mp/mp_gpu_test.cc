// GPU ranks in separate processes (CUDA IPC between their FIFOs on one host, NET through pinned host
// memory between hosts; core/gpu_job.h decides which jobs run). Skipped, saying why, without CUDA
// in the build or without a GPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "mp/netns_lab.h"
#include "mp/worker_job.h"
#if CC_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace collcomm::test {
namespace {

// GPU ranks in separate processes (CUDA IPC between their FIFOs). Two processes on device 0
// need MPS there: with it, the collectives must come out exact; without it, every rank's init
// must refuse the job naming both ranks and MPS, not hang.
#if CC_HAVE_CUDA
int usableGpus(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    return 0;
  }
  if (count == 0) *why = "no CUDA device";
  return count;
}

// Where two GPU ranks of separate processes can run: on device 0 under MPS, or on a GPU each. The
// worker's device setting, or "" with why not in *why.
std::string twoProcessDevice(std::string* why) {
  const int gpus = usableGpus(why);
  if (gpus == 0) return "";
  int mps = 0;
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0) != cudaSuccess) mps = 0;
  if (mps == 0 && gpus < 2) {
    *why = "needs MPS on device 0 or two GPUs";
    return "";
  }
  return mps != 0 ? "CC_MP_GPU_DEVICE=0" : "CC_MP_GPU_DEVICE=rank";
}
#endif

TEST(ProcessGpu, TwoProcessesOnOneGpuRunUnderMpsElseAreRefused) {
#if !CC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  if (usableGpus(&why) == 0) GTEST_SKIP() << why;
  int mps = 0, mode = cudaComputeModeDefault;
  ASSERT_EQ(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0), cudaSuccess);
  // An exclusive GPU without MPS refuses the second process's context before collcomm's init runs.
  if (mps == 0 && mode != cudaComputeModeDefault)
    GTEST_SKIP() << "device 0 is in an exclusive compute mode (" << mode << ") without MPS: a second process "
                 << "cannot use it at all";
  WorkerJob job("gpu", 2, {"CC_MP_GPU_DEVICE=0", "COLLCOMM_TIMEOUT=30"}, 90);
  ASSERT_EQ(job.run(), "");
  if (mps != 0) {
    expectAllSucceeded(job, 2);
    return;
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(exitedWith(job.result(r).status, 4)) << "rank " << r << "\n" << job.allOutput();
    EXPECT_NE(job.result(r).output.find("share a GPU from different processes"), std::string::npos) << job.allOutput();
    EXPECT_NE(job.result(r).output.find("MPS"), std::string::npos) << job.allOutput();
  }
#endif
}

TEST(ProcessGpu, ProcessesOnTheirOwnGpus) {
#if !CC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  const int gpus = usableGpus(&why);
  if (gpus < 2) GTEST_SKIP() << "needs two GPUs; " << (why.empty() ? "this machine has one" : why);
  WorkerJob job("gpu", std::min(gpus, 4), {"CC_MP_GPU_DEVICE=rank", "COLLCOMM_TIMEOUT=30"}, 90);
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, std::min(gpus, 4));
#endif
}

// Two GPU ranks of separate processes (on device 0 under MPS, or a GPU each), on one host or on
// two network-namespace "hosts" (as root), with `env`: the `gpu` scenario, exact on every rank; or,
// when `dies`, `gpu-die`: rank 1 dies after init, without a word to its peers as in a crash, and
// rank 0's AllReduce must fail naming it well before COLLCOMM_TIMEOUT (60 s). Skips, saying why,
// where it cannot run.
enum class Hosts { kOne, kApart };
void twoProcessJob(bool dies, Hosts hosts, std::vector<std::string> env) {
#if !CC_HAVE_CUDA
  (void)dies, (void)hosts, (void)env;
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  const std::string device = twoProcessDevice(&why);
  if (device.empty()) GTEST_SKIP() << why;
  NetnsLab lab;
  if (hosts == Hosts::kApart)
    if (const std::string noLab = lab.setUp(2); !noLab.empty()) GTEST_SKIP() << noLab;
  env.push_back(device);
  env.push_back(dies ? "COLLCOMM_TIMEOUT=60" : "COLLCOMM_TIMEOUT=30");
  WorkerJob job(dies ? "gpu-die" : "gpu", 2, env, 120);
  if (hosts == Hosts::kApart) job.setLauncher(lab.launcher());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(job.run(), "");
  if (!dies) return expectAllSucceeded(job, 2);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(exitedWith(job.result(1).status, 9)) << job.allOutput();
  EXPECT_TRUE(exitedWith(job.result(0).status, 0)) << job.allOutput();
  EXPECT_LT(seconds, 30.0) << "the death was not found before the deadline\n" << job.allOutput();
#endif
}

// On one host, found through /proc (common/process_watch.h).
TEST(ProcessGpu, DeadProcessIsNamedByItsPeerBeforeTheDeadline) { twoProcessJob(true, Hosts::kOne, {}); }

// The FIFOs shared through cudaIpcGetMemHandle (COLLCOMM_CUMEM_ENABLE=0) rather than as cuMem
// memory handed over as a file descriptor, which the other tests use where the GPU can export it.
TEST(ProcessGpu, ProcessesOverRuntimeIpc) { twoProcessJob(false, Hosts::kOne, {"COLLCOMM_CUMEM_ENABLE=0"}); }

// GPU ranks that reach each other over NET (transport/cuda/cuda_net_transport.cc: FIFOs in pinned
// host memory, moved by the proxy threads): on one host with COLLCOMM_P2P_DISABLE=1, which takes
// CUDA IPC away (the sockets of loopback); on two hosts with nothing disabled; a death across
// hosts, found through the closed NET connections.
TEST(ProcessGpu, ProcessesOverNet) {
  twoProcessJob(false, Hosts::kOne, {"COLLCOMM_P2P_DISABLE=1", "COLLCOMM_SOCKET_IFNAME=lo"});
}
TEST(ProcessGpu, HostsApartOverNet) { twoProcessJob(false, Hosts::kApart, {}); }

// A peer process that destroys its communicator and exits once its part is done fails no wait of
// the others on each other: ranks 0 and 1 exchange send/recv pairs after rank 2 has gone, exactly
// (its exit once went into the communicator's abort word and failed every later wait). Over CUDA
// IPC, and over NET on one host, where the exit also gives way to the proxy's ordered close.
void leavingPeerJob(std::vector<std::string> env) {
#if !CC_HAVE_CUDA
  (void)env;
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  const int gpus = usableGpus(&why);
  if (gpus == 0) GTEST_SKIP() << why;
  int mps = 0;
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0) != cudaSuccess) mps = 0;
  if (mps == 0 && gpus < 3) GTEST_SKIP() << "needs MPS on device 0 or three GPUs";
  env.push_back(mps != 0 ? "CC_MP_GPU_DEVICE=0" : "CC_MP_GPU_DEVICE=rank");
  env.push_back("COLLCOMM_TIMEOUT=30");
  WorkerJob job("gpu-leave", 3, env, 120);
  ASSERT_EQ(job.run(), "");
  expectAllSucceeded(job, 3);
#endif
}
TEST(ProcessGpu, APeerLeavingCleanlyFailsNoWaitOfTheOthers) { leavingPeerJob({}); }
TEST(ProcessGpu, APeerLeavingCleanlyOverNetFailsNoWaitOfTheOthers) {
  leavingPeerJob({"COLLCOMM_P2P_DISABLE=1", "COLLCOMM_SOCKET_IFNAME=lo"});
}
TEST(ProcessGpu, DeadProcessAcrossHostsIsNamedByItsPeer) { twoProcessJob(true, Hosts::kApart, {}); }

}  // namespace
}  // namespace collcomm::test
