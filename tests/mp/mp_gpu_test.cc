// GPU ranks in separate processes (CUDA IPC between their FIFOs; core/gpu_job.h decides which jobs
// run). Skipped, saying why, without CUDA in the build or without a GPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

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
#endif

TEST(ProcessGpu, TwoProcessesOnOneGpuRunUnderMpsElseAreRefused) {
#if !CC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  if (usableGpus(&why) == 0) GTEST_SKIP() << why;
  int mps = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0), cudaSuccess);
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

// A process of a GPU communicator dies after init (no word to its peers, as in a crash): the
// survivor's AllReduce fails naming it, found through /proc (common/process_watch.h) far sooner
// than COLLCOMM_TIMEOUT (60 s here). Two processes on device 0 under MPS, or on two GPUs.
TEST(ProcessGpu, DeadProcessIsNamedByItsPeerBeforeTheDeadline) {
#if !CC_HAVE_CUDA
  GTEST_SKIP() << "this build has no CUDA executor";
#else
  std::string why;
  const int gpus = usableGpus(&why);
  if (gpus == 0) GTEST_SKIP() << why;
  int mps = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, 0), cudaSuccess);
  if (mps == 0 && gpus < 2) GTEST_SKIP() << "needs MPS on device 0 or two GPUs";
  WorkerJob job("gpu-die", 2, {mps != 0 ? "CC_MP_GPU_DEVICE=0" : "CC_MP_GPU_DEVICE=rank", "COLLCOMM_TIMEOUT=60"}, 90);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(job.run(), "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(exitedWith(job.result(1).status, 9)) << job.allOutput();
  EXPECT_TRUE(exitedWith(job.result(0).status, 0)) << job.allOutput();
  EXPECT_LT(seconds, 30.0) << "the death was not found before the deadline\n" << job.allOutput();
#endif
}

}  // namespace
}  // namespace collcomm::test
