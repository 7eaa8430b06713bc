// The `gpu` scenario of cc_mp_worker (see gpu_ranks.h): GPU ranks in separate processes, which
// reach each other's FIFOs through CUDA IPC (transport/cuda/cuda_ipc_transport.cc) on one host, or
// NET between hosts.
#include "mp/gpu_ranks.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/process_watch.h"

#if CC_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace collcomm::test {

#if !CC_HAVE_CUDA

std::string runGpuRank(const ccUniqueId&, int, int, int, std::string*) {
  return "this build has no CUDA executor (the driver skips the GPU cases there)";
}
std::string runGpuLeave(const ccUniqueId&, int, int, std::string*) {
  return "this build has no CUDA executor (the driver skips the GPU cases there)";
}

#else

namespace {

std::string cudaFailed(const char* call, cudaError_t err) {
  return std::string(call) + " failed: " + cudaGetErrorString(err);
}

// Values 0..6 make every sum of up to 8 ranks exact in any order.
int32_t valueOf(int rank, size_t i) { return static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 3) % 7); }

// One collective on device buffers: send[] holds this rank's values, the result is copied back
// and compared with `expect`. Kinds: 0 AllReduce, 1 AllGather, 2 ReduceScatter, 3 Broadcast from
// the last rank.
std::string runOne(ccComm_t comm, cudaStream_t stream, int kind, size_t count, int rank, int nranks) {
  const size_t sendCount = kind == 2 ? count * nranks : count;
  const size_t recvCount = kind == 1 ? count * nranks : count;
  std::vector<int32_t> host(sendCount);
  for (size_t i = 0; i < sendCount; ++i) host[i] = valueOf(rank, i);
  std::vector<int32_t> expect(recvCount);
  for (size_t i = 0; i < recvCount; ++i) {
    if (kind == 3) {
      expect[i] = valueOf(nranks - 1, i);
    } else if (kind == 1) {
      expect[i] = valueOf(static_cast<int>(i / count), i % count);
    } else {
      const size_t at = kind == 2 ? static_cast<size_t>(rank) * count + i : i;
      int32_t sum = 0;
      for (int r = 0; r < nranks; ++r) sum += valueOf(r, at);
      expect[i] = sum;
    }
  }
  void* send = nullptr;
  void* recv = nullptr;
  cudaError_t err = cudaMalloc(&send, sendCount * sizeof(int32_t) + 1);
  if (err != cudaSuccess) return cudaFailed("cudaMalloc", err);
  err = cudaMalloc(&recv, recvCount * sizeof(int32_t) + 1);
  if (err != cudaSuccess) {
    cudaFree(send);
    return cudaFailed("cudaMalloc", err);
  }
  std::string why;
  err = cudaMemcpy(send, host.data(), sendCount * sizeof(int32_t), cudaMemcpyHostToDevice);
  if (err != cudaSuccess) why = cudaFailed("cudaMemcpy", err);
  ccResult_t r = ccSuccess;
  if (why.empty()) {
    r = kind == 0   ? ccAllReduce(send, recv, count, ccInt32, ccSum, comm, stream)
        : kind == 1 ? ccAllGather(send, recv, count, ccInt32, comm, stream)
        : kind == 2 ? ccReduceScatter(send, recv, count, ccInt32, ccSum, comm, stream)
                    : ccBroadcast(send, recv, count, ccInt32, nranks - 1, comm, stream);
    if (r != ccSuccess) why = std::string("enqueueing returned ") + ccGetErrorString(r) + ": " + ccGetLastError(comm);
  }
  if (why.empty() && (err = cudaStreamSynchronize(stream)) != cudaSuccess)
    why = cudaFailed("cudaStreamSynchronize", err);
  ccResult_t async = ccSuccess;
  if (why.empty() && ccCommGetAsyncError(comm, &async) == ccSuccess && async != ccSuccess)
    why = std::string("the operation failed: ") + ccGetErrorString(async) + ": " + ccGetLastError(comm);
  std::vector<int32_t> got(recvCount);
  if (why.empty() &&
      (err = cudaMemcpy(got.data(), recv, recvCount * sizeof(int32_t), cudaMemcpyDeviceToHost)) != cudaSuccess)
    why = cudaFailed("cudaMemcpy", err);
  for (size_t i = 0; why.empty() && i < recvCount; ++i)
    if (got[i] != expect[i])
      why = "element " + std::to_string(i) + " of " + std::to_string(recvCount) + " is " + std::to_string(got[i]) +
            ", expected " + std::to_string(expect[i]);
  cudaFree(send);
  cudaFree(recv);
  if (!why.empty()) {
    static const char* kNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
    return std::string(kNames[kind]) + " of " + std::to_string(count) + " int32: " + why;
  }
  return "";
}

// This rank's comm on CC_MP_GPU_DEVICE (see runGpuRank), or null with init's sentence in *refusal.
ccComm_t gpuComm(const ccUniqueId& id, int rank, int nranks, std::string* refusal, std::string* why) {
  const char* env = getenv("CC_MP_GPU_DEVICE");
  const int device = env == nullptr ? 0 : std::string(env) == "rank" ? rank : atoi(env);
  const cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    *why = cudaFailed("cudaSetDevice", err);
    return nullptr;
  }
  ccConfig_t cfg = CC_CONFIG_INITIALIZER;
  cfg.device = device;
  ccComm_t comm = nullptr;
  const ccResult_t init = ccCommInitRankConfig(&comm, nranks, id, rank, &cfg);
  if (init != ccSuccess) {
    *refusal = std::string(ccGetErrorString(init)) + ": " + ccGetLastError(nullptr);
    *why = "ccCommInitRankConfig returned " + *refusal;
    return nullptr;
  }
  return comm;
}

// Every rank's pid, through an AllGather on device memory.
std::string gatherPids(ccComm_t comm, cudaStream_t stream, int nranks, std::vector<int32_t>* pids) {
  int32_t* dev = nullptr;
  cudaError_t err = cudaMalloc(&dev, sizeof(int32_t) * (nranks + 1));
  if (err != cudaSuccess) return cudaFailed("cudaMalloc", err);
  const int32_t mine = static_cast<int32_t>(getpid());
  pids->assign(nranks, 0);
  std::string why;
  if ((err = cudaMemcpy(dev + nranks, &mine, sizeof(mine), cudaMemcpyHostToDevice)) != cudaSuccess)
    why = cudaFailed("cudaMemcpy", err);
  if (why.empty() && ccAllGather(dev + nranks, dev, 1, ccInt32, comm, stream) != ccSuccess)
    why = std::string("AllGather of pids: ") + ccGetLastError(comm);
  if (why.empty() && (err = cudaStreamSynchronize(stream)) != cudaSuccess) why = cudaFailed("cudaStreamSynchronize", err);
  ccResult_t async = ccSuccess;
  if (why.empty() && ccCommGetAsyncError(comm, &async) == ccSuccess && async != ccSuccess)
    why = std::string("AllGather of pids failed: ") + ccGetLastError(comm);
  if (why.empty() && (err = cudaMemcpy(pids->data(), dev, sizeof(int32_t) * nranks, cudaMemcpyDeviceToHost)) != cudaSuccess)
    why = cudaFailed("cudaMemcpy", err);
  cudaFree(dev);
  return why;
}

// Ranks 0 and 1 swap `count` int32 (each sends its values, receives the other's); "" when exact.
std::string swapPair(ccComm_t comm, cudaStream_t stream, int rank, size_t count) {
  const int peer = 1 - rank;
  std::vector<int32_t> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = valueOf(rank, i);
  int32_t* send = nullptr;
  int32_t* recv = nullptr;
  cudaError_t err = cudaMalloc(&send, count * sizeof(int32_t));
  if (err != cudaSuccess) return cudaFailed("cudaMalloc", err);
  if ((err = cudaMalloc(&recv, count * sizeof(int32_t))) != cudaSuccess) {
    cudaFree(send);
    return cudaFailed("cudaMalloc", err);
  }
  std::string why;
  if ((err = cudaMemcpy(send, host.data(), count * sizeof(int32_t), cudaMemcpyHostToDevice)) != cudaSuccess)
    why = cudaFailed("cudaMemcpy", err);
  if (why.empty()) {
    ccGroupStart();
    ccSend(send, count, ccInt32, peer, comm, stream);
    ccRecv(recv, count, ccInt32, peer, comm, stream);
    if (ccGroupEnd() != ccSuccess) why = std::string("the send/recv group: ") + ccGetLastError(comm);
  }
  if (why.empty() && (err = cudaStreamSynchronize(stream)) != cudaSuccess) why = cudaFailed("cudaStreamSynchronize", err);
  ccResult_t async = ccSuccess;
  if (why.empty() && ccCommGetAsyncError(comm, &async) == ccSuccess && async != ccSuccess)
    why = std::string("the send/recv pair failed: ") + ccGetErrorString(async) + ": " + ccGetLastError(comm);
  std::vector<int32_t> got(count);
  if (why.empty() && (err = cudaMemcpy(got.data(), recv, count * sizeof(int32_t), cudaMemcpyDeviceToHost)) != cudaSuccess)
    why = cudaFailed("cudaMemcpy", err);
  for (size_t i = 0; why.empty() && i < count; ++i)
    if (got[i] != valueOf(peer, i))
      why = "element " + std::to_string(i) + " received from rank " + std::to_string(peer) + " is " +
            std::to_string(got[i]) + ", expected " + std::to_string(valueOf(peer, i));
  cudaFree(send);
  cudaFree(recv);
  return why;
}

}  // namespace

std::string runGpuLeave(const ccUniqueId& id, int rank, int nranks, std::string* refusal) {
  std::string why;
  ccComm_t comm = gpuComm(id, rank, nranks, refusal, &why);
  if (comm == nullptr) return why;
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    ccCommAbort(comm);
    return cudaFailed("cudaStreamCreate", err);
  }
  std::vector<int32_t> pids;
  why = gatherPids(comm, stream, nranks, &pids);
  if (why.empty()) why = runOne(comm, stream, 0, 1001, rank, nranks);
  // The leaving rank's last part: a Broadcast it roots, which it may finish (and exit after) while
  // its last steps are still on their way to the others (over NET: in this host's socket buffers).
  if (why.empty()) why = runOne(comm, stream, 3, size_t{1} << 20, rank, nranks);
  const int leaving = nranks - 1;
  if (why.empty() && rank < 2) {
    // Only once the leaving rank's process is gone (its exit then marked by this rank's watch
    // within kProcessCheckPeriod), and for several of those periods.
    while (collcomm::detail::processAlive(pids[leaving])) sched_yield();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    int pairs = 0;
    while (why.empty() && (pairs < 4 || std::chrono::steady_clock::now() < until)) {
      why = swapPair(comm, stream, rank, size_t{1} << (10 + pairs % 8));
      ++pairs;
    }
    if (!why.empty()) why = "after rank " + std::to_string(leaving) + " left: " + why;
  }
  cudaStreamDestroy(stream);
  if (!why.empty()) {
    ccCommAbort(comm);
    return why;
  }
  const ccResult_t fin = ccCommDestroy(comm);
  if (fin != ccSuccess) return std::string("ccCommDestroy returned ") + ccGetErrorString(fin);
  return "";
}

std::string runGpuRank(const ccUniqueId& id, int rank, int nranks, int dyingRank, std::string* refusal) {
  std::string initFailed;
  ccComm_t comm = gpuComm(id, rank, nranks, refusal, &initFailed);
  if (comm == nullptr) return initFailed;
  if (rank == dyingRank) _exit(9);  // without a word to its peers, as a crash would
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    ccCommAbort(comm);
    return cudaFailed("cudaStreamCreate", err);
  }
  std::string why;
  if (dyingRank >= 0) {
    // The AllReduce must fail, naming the dead rank's process, long before COLLCOMM_TIMEOUT: found
    // through /proc on one host, through its closed connections over NET.
    why = runOne(comm, stream, 0, size_t{1} << 20, rank, nranks);
    const std::string rankText = "rank " + std::to_string(dyingRank);
    const bool named = why.find(rankText + "'s process exited") != std::string::npos ||
                       why.find(rankText + " exited and left the operation") != std::string::npos;
    why = named ? "" : "wanted a failure saying that " + rankText + "'s process exited, got: " + why;
    cudaStreamDestroy(stream);
    ccCommAbort(comm);
    return why;
  }
  for (size_t count : {size_t{1}, size_t{1001}, size_t{1} << 20})
    for (int kind = 0; kind < 3 && why.empty(); ++kind) why = runOne(comm, stream, kind, count, rank, nranks);
  cudaStreamDestroy(stream);
  if (!why.empty()) {
    ccCommAbort(comm);  // the peers see this rank leave instead of waiting for their deadline
    return why;
  }
  const ccResult_t fin = ccCommDestroy(comm);
  if (fin != ccSuccess) return std::string("ccCommDestroy returned ") + ccGetErrorString(fin);
  return "";
}

#endif

}  // namespace collcomm::test
