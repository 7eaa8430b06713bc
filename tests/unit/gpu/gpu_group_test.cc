// One launch per group (COLLCOMM_GPU_GROUP_LAUNCH; docs/gpu.md, "One launch per group"): a GPU
// communicator's collectives of one group, bit for bit against host communicators running the same
// group, and, captured into a graph, a run of like collectives as one kernel per 16. Ranks are
// threads of this process sharing device 0; without a usable GPU the tests skip, saying why
// (without CUDA in the build there is nothing to test here: gpu_comm_test.cc checks the refusal).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/watchdog.h"

#if CC_HAVE_CUDA
#include <cuda_runtime.h>

#include "unit/gpu/gpu_support.h"

namespace collcomm::test {
namespace {

enum class Kind { kAllReduce, kReduceScatter, kAllGather, kReduce, kBroadcast };

// One collective of the group, the same on every rank (float32; the inputs are small integers, so
// every sum is exact and both executors must agree bit for bit).
struct Call {
  Kind kind;
  size_t count;
  ccRedOp_t op = ccSum;
  int root = 0;
  bool inPlace = false;
  // >= 0: the input is that earlier call's output, from element inputOffset on (the group's order
  // must hold between them, whichever launches they land in).
  int inputFrom = -1;
  size_t inputOffset = 0;
};

// Elements rank r sends and receives (in place: one buffer of the larger size).
void spans(const Call& c, int n, size_t* send, size_t* recv) {
  *send = c.kind == Kind::kReduceScatter ? c.count * n : c.count;
  *recv = c.kind == Kind::kAllGather ? c.count * n : c.count;
}

// Where the send data starts in the single buffer of an in-place call (AllGather: the rank's
// slot), and where the result does (ReduceScatter: the rank's slot).
size_t sendOffset(const Call& c, int r) { return c.inPlace && c.kind == Kind::kAllGather ? c.count * r : 0; }
size_t recvOffset(const Call& c, int r) { return c.inPlace && c.kind == Kind::kReduceScatter ? c.count * r : 0; }

ccResult_t issue(const Call& c, const void* send, void* recv, ccComm_t comm, ccStream_t s) {
  switch (c.kind) {
    case Kind::kAllReduce:
      return ccAllReduce(send, recv, c.count, ccFloat32, c.op, comm, s);
    case Kind::kReduceScatter:
      return ccReduceScatter(send, recv, c.count, ccFloat32, c.op, comm, s);
    case Kind::kAllGather:
      return ccAllGather(send, recv, c.count, ccFloat32, comm, s);
    case Kind::kReduce:
      return ccReduce(send, recv, c.count, ccFloat32, c.op, c.root, comm, s);
    case Kind::kBroadcast:
      return ccBroadcast(send, recv, c.count, ccFloat32, c.root, comm, s);
  }
  return ccInvalidArgument;
}

// Every call on every rank in one group (one thread drives the ranks); the first failure's
// sentence in *why.
// streams: the GPU ranks' streams (null: host ranks); oddStreams, when set, odd ranks' streams
// for their odd calls.
ccResult_t runGroup(const std::vector<Call>& calls, const std::vector<ccComm_t>& comms,
                    const std::vector<std::vector<const void*>>& send, const std::vector<std::vector<void*>>& recv,
                    const std::vector<cudaStream_t>* streams, const std::vector<cudaStream_t>* oddStreams,
                    std::string* why) {
  ccResult_t first = ccSuccess;
  ccGroupStart();
  for (size_t r = 0; r < comms.size(); ++r)
    for (size_t k = 0; k < calls.size(); ++k) {
      cudaStream_t s = streams != nullptr ? (*streams)[r] : nullptr;
      if (oddStreams != nullptr && r % 2 == 1 && k % 2 == 1) s = (*oddStreams)[r];
      const ccResult_t res = issue(calls[k], send[r][k], recv[r][k], comms[r], s);
      if (first == ccSuccess && res != ccSuccess) {
        first = res;
        *why = ccGetLastError(comms[r]);
      }
    }
  const ccResult_t end = ccGroupEnd();
  if (first == ccSuccess && end != ccSuccess) *why = ccGetLastError(nullptr);
  return first != ccSuccess ? first : end;
}

// n GPU ranks and n host ranks running `calls` as one group on the same inputs; "" or what differs.
// With `graph`, the GPU ranks' group is captured on their streams and replayed, and *kernels gets
// the kernel nodes of each rank's graph. With `oddRanksSplit`, odd ranks put their odd calls on a
// second stream, so that they cut the group into other launches than their peers.
std::string compareWithHost(int n, const std::vector<Call>& calls, bool graph = false,
                            std::vector<size_t>* kernels = nullptr, bool oddRanksSplit = false) {
  std::vector<ccComm_t> gpu(n), host(n);
  const std::vector<int> devs(n, 0);
  if (ccCommInitAll(gpu.data(), n, devs.data()) != ccSuccess)
    return std::string("GPU ranks: ") + ccGetLastError(nullptr);
  if (ccCommInitAll(host.data(), n, nullptr) != ccSuccess) return std::string("host ranks: ") + ccGetLastError(nullptr);
  std::vector<cudaStream_t> streams(n), second(n);
  for (auto& s : streams) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (auto& s : second) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const size_t nCalls = calls.size();
  // Per rank and call: the inputs, the host's buffers, the GPU's.
  std::vector<std::vector<std::vector<float>>> in(n), hostSend(n), hostRecv(n);
  std::vector<std::vector<const void*>> hs(n), gs(n);
  std::vector<std::vector<void*>> hr(n), gr(n), dAlloc(n), dRecvBase(n);
  std::vector<std::vector<size_t>> bufElems(n);
  std::string failure;
  for (int r = 0; r < n && failure.empty(); ++r) {
    for (size_t k = 0; k < nCalls && failure.empty(); ++k) {
      const Call& c = calls[k];
      size_t sc = 0, rc = 0;
      spans(c, n, &sc, &rc);
      const size_t elems = std::max(sc, rc) + 16;  // 16 guard elements past the end
      bufElems[r].push_back(elems);
      std::vector<float> data(elems);
      for (size_t i = 0; i < elems; ++i)
        data[i] = static_cast<float>((r + 1) * static_cast<int>(i % 13) + static_cast<int>(k));
      in[r].push_back(data);
      hostSend[r].push_back(data);
      hostRecv[r].push_back(c.inPlace ? data : std::vector<float>(elems, -1.0f));
      void* dRecv = nullptr;
      void* dSend = nullptr;
      if (cudaMalloc(&dRecv, elems * sizeof(float)) != cudaSuccess) failure = "cudaMalloc failed";
      dAlloc[r].push_back(dRecv);
      dRecvBase[r].push_back(dRecv);
      const std::vector<float>& recvInit = hostRecv[r].back();
      if (failure.empty()) cudaMemcpy(dRecv, recvInit.data(), elems * sizeof(float), cudaMemcpyHostToDevice);
      if (c.inPlace) {
        hs[r].push_back(hostRecv[r][k].data() + sendOffset(c, r));
        hr[r].push_back(hostRecv[r][k].data() + recvOffset(c, r));
        gs[r].push_back(static_cast<float*>(dRecv) + sendOffset(c, r));
        gr[r].push_back(static_cast<float*>(dRecv) + recvOffset(c, r));
      } else {
        if (failure.empty() && cudaMalloc(&dSend, elems * sizeof(float)) != cudaSuccess) failure = "cudaMalloc failed";
        dAlloc[r].push_back(dSend);
        if (failure.empty()) cudaMemcpy(dSend, data.data(), elems * sizeof(float), cudaMemcpyHostToDevice);
        hs[r].push_back(hostSend[r][k].data());
        hr[r].push_back(hostRecv[r][k].data());
        gs[r].push_back(dSend);
        gr[r].push_back(dRecv);
      }
    }
  }
  // Calls that read an earlier call's output, on both executors.
  for (int r = 0; r < n && failure.empty(); ++r)
    for (size_t k = 0; k < nCalls; ++k) {
      const Call& c = calls[k];
      if (c.inputFrom < 0) continue;
      const size_t from = static_cast<size_t>(c.inputFrom);
      hs[r][k] = static_cast<const float*>(hr[r][from]) + c.inputOffset;
      gs[r][k] = static_cast<const float*>(gr[r][from]) + c.inputOffset;
    }
  std::string why;
  if (failure.empty() && runGroup(calls, host, hs, hr, nullptr, nullptr, &why) != ccSuccess)
    failure = "host group: " + why;
  if (failure.empty() && cudaDeviceSynchronize() != cudaSuccess) failure = "cudaDeviceSynchronize failed";
  std::vector<cudaGraph_t> graphs(n, nullptr);
  std::vector<cudaGraphExec_t> execs(n, nullptr);
  if (failure.empty() && graph)
    for (int r = 0; r < n; ++r) cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeRelaxed);
  if (failure.empty() && runGroup(calls, gpu, gs, gr, &streams, oddRanksSplit ? &second : nullptr, &why) != ccSuccess)
    failure = "GPU group: " + why;
  if (graph) {
    for (int r = 0; r < n; ++r) {
      if (cudaStreamEndCapture(streams[r], &graphs[r]) != cudaSuccess && failure.empty()) failure = "end of capture";
      if (!failure.empty()) continue;
      size_t nodes = 0;
      cudaGraphGetNodes(graphs[r], nullptr, &nodes);
      std::vector<cudaGraphNode_t> all(nodes);
      cudaGraphGetNodes(graphs[r], all.data(), &nodes);
      size_t kernelNodes = 0;
      for (cudaGraphNode_t node : all) {
        cudaGraphNodeType type;
        if (cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel) ++kernelNodes;
      }
      if (kernels != nullptr) kernels->push_back(kernelNodes);
      if (cudaGraphInstantiate(&execs[r], graphs[r], 0) != cudaSuccess) failure = "cudaGraphInstantiate failed";
    }
    for (int r = 0; r < n && failure.empty(); ++r)
      if (cudaGraphLaunch(execs[r], streams[r]) != cudaSuccess) failure = "cudaGraphLaunch failed";
  }
  for (int r = 0; r < n && failure.empty(); ++r)
    if (cudaStreamSynchronize(streams[r]) != cudaSuccess || cudaStreamSynchronize(second[r]) != cudaSuccess)
      failure = "cudaStreamSynchronize failed";
  for (int r = 0; r < n && failure.empty(); ++r) {
    ccResult_t async = ccSuccess;
    ccCommGetAsyncError(gpu[r], &async);
    if (async != ccSuccess) failure = std::string("GPU kernel failed: ") + ccGetLastError(gpu[r]);
  }
  for (int r = 0; r < n && failure.empty(); ++r)
    for (size_t k = 0; k < nCalls && failure.empty(); ++k) {
      const Call& c = calls[k];
      // A non-root's Reduce output is not the user's to look at.
      if (c.kind == Kind::kReduce && r != c.root) continue;
      // The whole receive allocation: the result, what must be left alone around it, the guard.
      std::vector<float> out(bufElems[r][k]);
      cudaMemcpy(out.data(), dRecvBase[r][k], out.size() * sizeof(float), cudaMemcpyDeviceToHost);
      const std::vector<float>& want = hostRecv[r][k];
      for (size_t i = 0; i < out.size() && failure.empty(); ++i) {
        if (memcmp(&out[i], &want[i], sizeof(float)) != 0)
          failure = "rank " + std::to_string(r) + " call " + std::to_string(k) + " element " + std::to_string(i) +
                    ": GPU " + std::to_string(out[i]) + ", host " + std::to_string(want[i]);
      }
    }
  for (int r = 0; r < n; ++r) {
    if (execs[r] != nullptr) cudaGraphExecDestroy(execs[r]);
    if (graphs[r] != nullptr) cudaGraphDestroy(graphs[r]);
    for (void* p : dAlloc[r])
      if (p != nullptr) cudaFree(p);
    cudaStreamDestroy(streams[r]);
    cudaStreamDestroy(second[r]);
    ccCommDestroy(gpu[r]);
    ccCommDestroy(host[r]);
  }
  return failure;
}

// Every kind, counts from 0 to several channels' worth (so the works' channel counts differ), in
// and out of place, roots and reductions: runs of like collectives share launches, the others
// break them.
std::vector<Call> mixedGroup(int n) {
  std::vector<Call> calls;
  for (int k = 0; k < 18; ++k)
    calls.push_back({Kind::kAllReduce, k % 5 == 0 ? size_t{300000} + k : size_t{97} * k, ccSum, 0, k % 2 == 1});
  calls.push_back({Kind::kAllReduce, 4097, ccMax});
  calls.push_back({Kind::kAllReduce, 1, ccMax, 0, true});
  for (size_t count : {size_t{1}, size_t{5000}, size_t{70001}}) calls.push_back({Kind::kReduceScatter, count, ccSum});
  calls.push_back({Kind::kReduceScatter, 333, ccSum, 0, true});
  for (size_t count : {size_t{3}, size_t{4096}, size_t{100001}}) calls.push_back({Kind::kAllGather, count});
  calls.push_back({Kind::kAllGather, 777, ccSum, 0, true});
  calls.push_back({Kind::kReduce, 7, ccSum, n - 1});
  calls.push_back({Kind::kReduce, 65537, ccSum, 0, true});
  calls.push_back({Kind::kBroadcast, 0, ccSum, 1 % n});
  calls.push_back({Kind::kBroadcast, 12345, ccSum, 1 % n});
  calls.push_back({Kind::kBroadcast, 999, ccSum, 0, true});
  calls.push_back({Kind::kAllReduce, 5, ccSum});
  // Calls that read an earlier one's output: a large AllReduce (several channels), then a small
  // one (one channel, so block 0) reading the large one's last elements, which another block
  // writes; then a Max over the small one's output. Each must see the earlier one finished.
  const int large = static_cast<int>(calls.size());
  calls.push_back({Kind::kAllReduce, 300001, ccSum});
  calls.push_back({Kind::kAllReduce, 1000, ccSum, 0, false, large, 300001 - 1000});
  calls.push_back({Kind::kAllReduce, 1000, ccMax, 0, false, large + 1});
  return calls;
}

TEST(GpuGroup, MixedGroupMatchesHost) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(300, [] {
    for (int n : {1, 2, 4}) EXPECT_EQ(compareWithHost(n, mixedGroup(n)), "") << n << " ranks";
  });
}

// Ranks that cut the same group into different launches (odd ranks put odd calls on another
// stream, so their runs break where their peers' do not): each channel's FIFO still carries the
// works in the group's order, and the results match.
TEST(GpuGroup, RanksCuttingTheGroupDifferentlyAgree) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(300, [] {
    for (int n : {2, 4}) EXPECT_EQ(compareWithHost(n, mixedGroup(n), false, nullptr, true), "") << n << " ranks";
  });
}

// 18 AllReduces alike but for their buffers: 16 in the first kernel, 2 in the second (the kernel
// nodes of a captured group count the launches), and the replay matches the host.
TEST(GpuGroup, LikeCollectivesAreOneKernelPerSixteen) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    for (int n : {2, 4}) {
      std::vector<Call> calls;
      for (int k = 0; k < 18; ++k) calls.push_back({Kind::kAllReduce, 4099, ccSum, 0, k % 2 == 0});
      std::vector<size_t> kernels;
      EXPECT_EQ(compareWithHost(n, calls, true, &kernels), "") << n << " ranks";
      ASSERT_EQ(kernels.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) EXPECT_EQ(kernels[r], 2u) << "rank " << r << " of " << n;
    }
  });
}

// cudaStreamPerThread names the stream of the thread that uses it: a non-blocking communicator's
// operations are launched by its worker, so it refuses that handle with a sentence (queueing
// nothing) and takes a real stream.
TEST(GpuGroup, NonBlockingCommunicatorRefusesThePerThreadStream) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(60, [] {
    ccComm_t comm = nullptr;
    ccConfig_t cfg = CC_CONFIG_INITIALIZER;
    cfg.device = 0;
    cfg.blocking = 0;
    ccUniqueId id;
    CC_OK(ccGetUniqueId(&id));
    const ccResult_t made = ccCommInitRankConfig(&comm, 1, id, 0, &cfg);
    ASSERT_TRUE(made == ccSuccess || made == ccInProgress) << ccGetLastError(nullptr);
    ccResult_t state = ccInProgress;
    while (state == ccInProgress) ASSERT_EQ(ccCommGetAsyncError(comm, &state), ccSuccess);
    ASSERT_EQ(state, ccSuccess) << ccGetLastError(comm);
    float* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 64 * sizeof(float)));
    EXPECT_EQ(ccAllReduce(d, d, 64, ccFloat32, ccSum, comm, cudaStreamPerThread), ccInvalidUsage);
    EXPECT_NE(std::string(ccGetLastError(comm)).find("cudaStreamPerThread"), std::string::npos) << ccGetLastError(comm);
    cudaStream_t s = nullptr;
    CUDA_OK(cudaStreamCreate(&s));
    const ccResult_t queued = ccAllReduce(d, d, 64, ccFloat32, ccSum, comm, s);
    EXPECT_TRUE(queued == ccSuccess || queued == ccInProgress) << ccGetLastError(comm);
    state = ccInProgress;
    while (state == ccInProgress) ASSERT_EQ(ccCommGetAsyncError(comm, &state), ccSuccess);
    EXPECT_EQ(state, ccSuccess) << ccGetLastError(comm);
    CUDA_OK(cudaStreamSynchronize(s));
    cudaStreamDestroy(s);
    cudaFree(d);
    EXPECT_EQ(ccCommDestroy(comm), ccSuccess);
  });
}

}  // namespace
}  // namespace collcomm::test

#endif  // CC_HAVE_CUDA
