// GPU communicators: ranks as threads of this process sharing one GPU (device 0), checked bit for
// bit against host communicators (the host executor is the oracle) on the same inputs; graph
// capture; a stuck kernel's abort and timeout; the arguments a GPU communicator refuses.
//
// Without CUDA in the build every test checks that GPU communicators are refused with a sentence;
// with CUDA but no usable GPU they skip, saying why.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/exact_data.h"
#include "support/watchdog.h"

#if CC_HAVE_CUDA
#include <cuda_runtime.h>

#include "unit/gpu/gpu_support.h"
#endif

namespace collcomm::test {
namespace {

#if !CC_HAVE_CUDA

TEST(GpuComm, RefusedWithoutCuda) {
  ccComm_t comms[2] = {nullptr, nullptr};
  const int devs[2] = {0, 0};
  EXPECT_EQ(ccCommInitAll(comms, 2, devs), ccInvalidUsage);
  EXPECT_NE(std::string(ccGetLastError(nullptr)).find("no CUDA executor"), std::string::npos)
      << ccGetLastError(nullptr);
}

#else

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* collLabel(Coll c) {
  static const char* kNames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  return kNames[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

// Element counts each rank sends and receives for `count` (the API's count).
void spans(Coll c, size_t count, int n, size_t* sendCount, size_t* recvCount) {
  switch (c) {
    case Coll::kAllGather: *sendCount = count; *recvCount = count * n; break;
    case Coll::kReduceScatter: *sendCount = count * n; *recvCount = count; break;
    default: *sendCount = count; *recvCount = count; break;
  }
}

// One collective on every rank of `comms` in one group (host communicators: the group runs them
// on their workers; GPU communicators: enqueued on streams[r]). ops[r]: the reduction (a
// PreMulSum op is each communicator's own).
ccResult_t runGroup(Coll c, const std::vector<ccComm_t>& comms, const std::vector<const void*>& send,
                    const std::vector<void*>& recv, size_t count, ccDataType_t t, const std::vector<ccRedOp_t>& ops,
                    int root, const std::vector<cudaStream_t>* streams, std::string* why) {
  ccGroupStart();
  ccResult_t first = ccSuccess;
  for (size_t r = 0; r < comms.size(); ++r) {
    ccStream_t s = streams != nullptr ? (*streams)[r] : nullptr;
    ccResult_t res = ccSuccess;
    switch (c) {
      case Coll::kAllReduce: res = ccAllReduce(send[r], recv[r], count, t, ops[r], comms[r], s); break;
      case Coll::kBroadcast: res = ccBroadcast(send[r], recv[r], count, t, root, comms[r], s); break;
      case Coll::kReduce: res = ccReduce(send[r], recv[r], count, t, ops[r], root, comms[r], s); break;
      case Coll::kAllGather: res = ccAllGather(send[r], recv[r], count, t, comms[r], s); break;
      case Coll::kReduceScatter: res = ccReduceScatter(send[r], recv[r], count, t, ops[r], comms[r], s); break;
    }
    if (first == ccSuccess && res != ccSuccess) {
      first = res;
      *why = ccGetLastError(comms[r]);
    }
  }
  const ccResult_t end = ccGroupEnd();
  if (first == ccSuccess && end != ccSuccess) *why = ccGetLastError(nullptr);
  return first != ccSuccess ? first : end;
}

// n GPU ranks on device 0 and n host ranks, with a stream per GPU rank.
class Pair {
 public:
  explicit Pair(int n) : n_(n), gpu_(n), host_(n), streams_(n) {
    const std::vector<int> devs(n, 0);
    ok_ = ccCommInitAll(gpu_.data(), n, devs.data()) == ccSuccess;
    if (!ok_) {
      error_ = ccGetLastError(nullptr);
      return;
    }
    for (ccComm_t c : gpu_) {
      int device = -1;
      if (ccCommDevice(c, &device) != ccSuccess || device != 0) {
        ok_ = false;
        error_ = "ccCommInitAll with devlist {0, ...} made a communicator on device " + std::to_string(device);
        return;
      }
    }
    ok_ = ccCommInitAll(host_.data(), n, nullptr) == ccSuccess;
    for (auto& s : streams_) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  ~Pair() {
    for (auto& s : streams_)
      if (s != nullptr) cudaStreamDestroy(s);
    for (ccComm_t c : gpu_) ccCommDestroy(c);
    for (ccComm_t c : host_) ccCommDestroy(c);
  }
  bool ok() const { return ok_; }
  // Later checks put NaNs (all-ones payload) among the inputs: in every 3rd element on every rank,
  // in every 5th on odd ranks only.
  void setNanInputs(bool on) { nanInputs_ = on; }
  // The GPU ranks' PreMulSum ops (op -1) take their scalar from device memory (ccScalarDevice).
  void setDeviceScalars(bool on) { deviceScalars_ = on; }
  const std::string& error() const { return error_; }

  // Runs the case on both and returns "" or what differs.
  std::string check(Coll c, ccDataType_t t, int op, size_t count, int root, bool inPlace) {
    const size_t e = dtypeSize(t);
    size_t sc = 0, rc = 0;
    spans(c, count, n_, &sc, &rc);
    // In place: the send buffer is this rank's slice of the receive buffer (or the reverse).
    const size_t bufElems = std::max(sc, rc);
    std::vector<std::vector<char>> in(n_), hostOut(n_), gpuOut(n_);
    std::vector<ccRedOp_t> gpuOps(n_, static_cast<ccRedOp_t>(op < 0 ? ccSum : op)), hostOps = gpuOps;
    std::vector<void*> dScalar(n_, nullptr);  // deviceScalars_: the GPU ranks' PreMulSum scalars
    const int fillOp = reduces(c) ? op : ccSum;
    for (int r = 0; r < n_; ++r) {
      in[r].assign(bufElems * e, 0);
      fillInputs(fillOp, t, r, in[r].data(), bufElems);
      if (nanInputs_) injectNans(t, r, in[r].data(), bufElems);
      if (op < 0) {
        std::vector<char> scalar(e);
        storeValue(t, scalar.data(), kPreMulScalar);
        if (deviceScalars_) {
          // In device memory, written on the rank's stream after the op is made: the kernel must
          // read it when it runs.
          if (cudaMalloc(&dScalar[r], e) != cudaSuccess ||
              ccRedOpCreatePreMulSum(&gpuOps[r], dScalar[r], t, ccScalarDevice, gpu_[r]) != ccSuccess ||
              cudaMemcpyAsync(dScalar[r], scalar.data(), e, cudaMemcpyHostToDevice, streams_[r]) != cudaSuccess)
            return std::string("a device-resident PreMulSum scalar: ") + ccGetLastError(nullptr);
        } else if (ccRedOpCreatePreMulSum(&gpuOps[r], scalar.data(), t, ccScalarHostImmediate, gpu_[r]) != ccSuccess) {
          return std::string("ccRedOpCreatePreMulSum: ") + ccGetLastError(nullptr);
        }
        if (ccRedOpCreatePreMulSum(&hostOps[r], scalar.data(), t, ccScalarHostImmediate, host_[r]) != ccSuccess)
          return std::string("ccRedOpCreatePreMulSum: ") + ccGetLastError(nullptr);
      }
    }
    // Where each rank's send data starts within its buffer when in place.
    auto sendOffset = [&](int r) -> size_t {
      if (!inPlace) return 0;
      if (c == Coll::kAllGather) return static_cast<size_t>(r) * count * e;
      return 0;
    };
    auto recvOffset = [&](int r) -> size_t {
      if (!inPlace) return 0;
      if (c == Coll::kReduceScatter) return static_cast<size_t>(r) * count * e;
      return 0;
    };
    // Host oracle.
    std::vector<std::vector<char>> hostSend(n_), hostRecv(n_);
    std::vector<const void*> hs(n_);
    std::vector<void*> hr(n_);
    for (int r = 0; r < n_; ++r) {
      hostRecv[r].assign(bufElems * e + 64, static_cast<char>(0x5a));
      if (inPlace) {
        memcpy(hostRecv[r].data(), in[r].data(), bufElems * e);
        hs[r] = hostRecv[r].data() + sendOffset(r);
        hr[r] = hostRecv[r].data() + recvOffset(r);
      } else {
        hostSend[r] = in[r];
        hs[r] = hostSend[r].data();
        hr[r] = hostRecv[r].data();
      }
    }
    std::string why;
    if (runGroup(c, host_, hs, hr, count, t, hostOps, root, nullptr, &why) != ccSuccess)
      return "host oracle failed: " + why;
    // GPU.
    std::vector<void*> dsend(n_, nullptr), drecv(n_, nullptr);
    std::vector<const void*> gs(n_);
    std::vector<void*> gr(n_);
    std::string failure;
    for (int r = 0; r < n_ && failure.empty(); ++r) {
      if (cudaMalloc(&drecv[r], bufElems * e + 64) != cudaSuccess) failure = "cudaMalloc failed";
      else if (cudaMemset(drecv[r], 0x5a, bufElems * e + 64) != cudaSuccess) failure = "cudaMemset failed";
      if (failure.empty() && inPlace) {
        cudaMemcpy(drecv[r], in[r].data(), bufElems * e, cudaMemcpyHostToDevice);
        gs[r] = static_cast<char*>(drecv[r]) + sendOffset(r);
        gr[r] = static_cast<char*>(drecv[r]) + recvOffset(r);
      } else if (failure.empty()) {
        if (cudaMalloc(&dsend[r], bufElems * e + 1) != cudaSuccess) failure = "cudaMalloc failed";
        else cudaMemcpy(dsend[r], in[r].data(), bufElems * e, cudaMemcpyHostToDevice);
        gs[r] = dsend[r];
        gr[r] = drecv[r];
      }
    }
    // cudaMemcpy from pageable memory may return before its DMA lands, and the kernels run on
    // non-blocking streams: wait for the uploads (the first GPU run read stale inputs without).
    if (failure.empty() && cudaDeviceSynchronize() != cudaSuccess) failure = "cudaDeviceSynchronize failed";
    if (failure.empty() && runGroup(c, gpu_, gs, gr, count, t, gpuOps, root, &streams_, &why) != ccSuccess)
      failure = "GPU enqueue failed: " + why;
    for (int r = 0; r < n_ && failure.empty(); ++r)
      if (cudaStreamSynchronize(streams_[r]) != cudaSuccess) failure = "cudaStreamSynchronize failed";
    for (int r = 0; r < n_ && failure.empty(); ++r) {
      ccResult_t async = ccSuccess;
      ccCommGetAsyncError(gpu_[r], &async);
      if (async != ccSuccess) failure = std::string("GPU kernel failed: ") + ccGetLastError(gpu_[r]);
    }
    for (int r = 0; r < n_ && failure.empty(); ++r) {
      gpuOut[r].assign(bufElems * e + 64, 0);
      cudaMemcpy(gpuOut[r].data(), drecv[r], bufElems * e + 64, cudaMemcpyDeviceToHost);
      // Compare what the user may look at: the receive span (root only for Reduce), and the bytes
      // after it (nothing may be written past the end).
      const bool hasResult = c != Coll::kReduce || r == root;
      const size_t from = recvOffset(r), bytes = hasResult ? rc * e : 0;
      // Floating AVG is the one result that depends on the order of the sums, which differs with
      // the plan (channels, protocol, step size): both executors are held to the exact average
      // within the type's tolerance instead (as the host conformance tests are).
      if (op == ccAvg && dtypeIsFloating(t) && n_ > 2) {
        std::string first;
        const size_t firstIndex = c == Coll::kReduceScatter ? static_cast<size_t>(r) * count : 0;
        if (bytes != 0 && countWrong(op, t, n_, gpuOut[r].data() + from, rc, firstIndex, &first) != 0)
          failure = "rank " + std::to_string(r) + " (GPU, AVG): " + first;
        if (bytes != 0 && failure.empty() && countWrong(op, t, n_, hostRecv[r].data() + from, rc, firstIndex, &first) != 0)
          failure = "rank " + std::to_string(r) + " (host, AVG): " + first;
        continue;
      }
      for (size_t b = 0; b < bytes && failure.empty(); ++b)
        if (gpuOut[r][from + b] != hostRecv[r][from + b]) {
          char msg[200];
          snprintf(msg, sizeof(msg), "rank %d byte %zu (element %zu): GPU 0x%02x, host 0x%02x", r, b, b / e,
                   static_cast<unsigned char>(gpuOut[r][from + b]), static_cast<unsigned char>(hostRecv[r][from + b]));
          failure = msg;
        }
      if (failure.empty() && !inPlace && gpuOut[r][bufElems * e] != static_cast<char>(0x5a))
        failure = "rank " + std::to_string(r) + ": the GPU wrote past the receive buffer";
    }
    for (int r = 0; r < n_; ++r) {
      if (dsend[r] != nullptr) cudaFree(dsend[r]);
      if (drecv[r] != nullptr) cudaFree(drecv[r]);
      if (op < 0) {
        ccRedOpDestroy(gpuOps[r], gpu_[r]);
        ccRedOpDestroy(hostOps[r], host_[r]);
      }
      if (dScalar[r] != nullptr) cudaFree(dScalar[r]);
    }
    return failure;
  }

 private:
  static void injectNans(ccDataType_t t, int r, char* buf, size_t n) {
    const size_t e = dtypeSize(t);
    for (size_t i = 0; i < n; ++i) {
      if (i % 3 != 0 && !(i % 5 == 0 && r % 2 == 1)) continue;
      if (e == 2) {
        const uint16_t nan = 0x7fff;
        memcpy(buf + i * e, &nan, e);
      } else if (e == 4) {
        const uint32_t nan = 0x7fffffff;
        memcpy(buf + i * e, &nan, e);
      }
    }
  }

  int n_;
  bool nanInputs_ = false;
  bool deviceScalars_ = false;
  bool ok_ = false;
  std::string error_;
  std::vector<ccComm_t> gpu_, host_;
  std::vector<cudaStream_t> streams_;
};

std::string caseName(Coll c, ccDataType_t t, int op, size_t count, int root, bool inPlace, int n) {
  char buf[160];
  snprintf(buf, sizeof(buf), "%d ranks %s %s op %d count %zu root %d%s", n, collLabel(c), dtypeName(t), op, count,
           root, inPlace ? " in place" : "");
  return buf;
}

// Every collective x dtype x op at small counts (LL where the planner takes it; ranks sharing a
// GPU take Simple, and ctest's GpuComm.LlForcedMatchesHost forces LL) and large ones (Simple,
// several channels), in and out of place; the largest count for a representative subset.
void sweep(int n) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(600, [&] {
    Pair p(n);
    ASSERT_TRUE(p.ok()) << p.error();
    const size_t counts[] = {0, 1, 7, 1000, 65537, (size_t{1} << 18) + 3};
    const int ops[] = {ccSum, ccProd, ccMax, ccMin, ccAvg, -1};
    const Coll colls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter};
    int failures = 0, cases = 0;
    const auto start = std::chrono::steady_clock::now();
    for (Coll c : colls)
      for (int ti = 0; ti < ccNumTypes; ++ti) {
        const auto t = static_cast<ccDataType_t>(ti);
        for (int op : ops) {
          if (!reduces(c) && op != ccSum) continue;
          for (size_t count : counts) {
            const bool large = count > 100000;  // several channels, Simple
            if (large && !(t == ccFloat32 || t == ccBfloat16 || t == ccInt8) && !(count == 0)) continue;
            for (int inPlace = 0; inPlace < 2; ++inPlace) {
              const int root = (c == Coll::kBroadcast || c == Coll::kReduce) ? (n - 1) : 0;
              const std::string f = p.check(c, t, op, count, root, inPlace != 0);
              ++cases;
              if (!f.empty()) {
                ++failures;
                ADD_FAILURE() << caseName(c, t, op, count, root, inPlace != 0, n) << ": " << f;
                if (failures > 10) return;
              }
            }
          }
        }
      }
    printf("%d ranks: %d cases, %d failed, %.1f s\n", n, cases, failures,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
}


// NaN inputs: Max/Min on half and bfloat16 keep the NaN operand's bits on both executors.
TEST(GpuComm, NanBitsMatchHost) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    for (int n : {2, 4}) {
      Pair p(n);
      ASSERT_TRUE(p.ok()) << p.error();
      p.setNanInputs(true);
      for (ccDataType_t t : {ccFloat16, ccBfloat16, ccFloat32})
        for (int op : {ccMax, ccMin})
          for (Coll c : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter})
            for (size_t count : {size_t{4097}, size_t{65537}})
              for (int inPlace = 0; inPlace < 2; ++inPlace) {
                const std::string f = p.check(c, t, op, count, n - 1, inPlace != 0);
                EXPECT_TRUE(f.empty()) << caseName(c, t, op, count, n - 1, inPlace != 0, n) << ": " << f;
              }
    }
  });
}

// PreMulSum with its scalar in device memory (ccScalarDevice), read by the kernel when it runs:
// every type and reducing collective, bit for bit against host communicators given the same scalar
// immediately. A scalar in host memory is refused, naming it.
TEST(GpuComm, DeviceScalarPreMulSumMatchesHost) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(180, [] {
    Pair p(2);
    ASSERT_TRUE(p.ok()) << p.error();
    p.setDeviceScalars(true);
    for (int ti = 0; ti < ccNumTypes; ++ti)
      for (Coll c : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter})
        for (size_t count : {size_t{7}, size_t{65537}}) {
          const auto t = static_cast<ccDataType_t>(ti);
          const std::string f = p.check(c, t, -1, count, 1, false);
          EXPECT_TRUE(f.empty()) << caseName(c, t, -1, count, 1, false, 2) << ": " << f;
        }
    std::vector<ccComm_t> comms(2);
    const int devs[2] = {0, 0};
    CC_OK(ccCommInitAll(comms.data(), 2, devs));
    float hostScalar = 0.5f;
    ccRedOp_t op;
    CC_OK(ccRedOpCreatePreMulSum(&op, &hostScalar, ccFloat32, ccScalarDevice, comms[0]));
    float* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 64));
    EXPECT_EQ(ccAllReduce(d, d, 16, ccFloat32, op, comms[0], nullptr), ccInvalidArgument);
    EXPECT_NE(std::string(ccGetLastError(comms[0])).find("the PreMulSum op's scalar"), std::string::npos)
        << ccGetLastError(comms[0]);
    CC_OK(ccRedOpDestroy(op, comms[0]));
    cudaFree(d);
    for (ccComm_t comm : comms) CC_OK(ccCommDestroy(comm));
  });
}

// Operations enqueued while the streams are captured run when the graph is replayed, with the
// inputs the buffers hold at replay time.
TEST(GpuComm, GraphCaptureReplays) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    constexpr int n = 4;
    constexpr size_t count = 100000;
    std::vector<ccComm_t> comms(n);
    const std::vector<int> devs(n, 0);
    CC_OK(ccCommInitAll(comms.data(), n, devs.data()));
    std::vector<cudaStream_t> streams(n);
    std::vector<float*> buf(n);
    for (int r = 0; r < n; ++r) {
      CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
      CUDA_OK(cudaMalloc(&buf[r], count * sizeof(float)));
    }
    for (int r = 0; r < n; ++r) CUDA_OK(cudaStreamBeginCapture(streams[r], cudaStreamCaptureModeRelaxed));
    // No assertion between start and end: a test that left its group open would leave the next
    // test's calls queued in it.
    CC_OK(ccGroupStart());
    std::vector<ccResult_t> queued(n);
    for (int r = 0; r < n; ++r) queued[r] = ccAllReduce(buf[r], buf[r], count, ccFloat32, ccSum, comms[r], streams[r]);
    CC_OK(ccGroupEnd());
    for (int r = 0; r < n; ++r) ASSERT_EQ(queued[r], ccSuccess) << ccGetLastError(comms[r]);
    std::vector<cudaGraph_t> graphs(n);
    std::vector<cudaGraphExec_t> execs(n);
    for (int r = 0; r < n; ++r) {
      CUDA_OK(cudaStreamEndCapture(streams[r], &graphs[r]));
      CUDA_OK(cudaGraphInstantiate(&execs[r], graphs[r], 0));
    }
    for (int replay = 1; replay <= 3; ++replay) {
      std::vector<float> h(count);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) h[i] = static_cast<float>((r + 1) * replay + static_cast<int>(i % 7));
        CUDA_OK(cudaMemcpy(buf[r], h.data(), count * sizeof(float), cudaMemcpyHostToDevice));
      }
      CUDA_OK(cudaDeviceSynchronize());  // the pageable uploads above have landed
      for (int r = 0; r < n; ++r) CUDA_OK(cudaGraphLaunch(execs[r], streams[r]));
      for (int r = 0; r < n; ++r) CUDA_OK(cudaStreamSynchronize(streams[r]));
      for (int r = 0; r < n; ++r) {
        CUDA_OK(cudaMemcpy(h.data(), buf[r], count * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i += 997) {
          const float want = static_cast<float>(replay * (1 + 2 + 3 + 4) + n * static_cast<int>(i % 7));
          ASSERT_EQ(h[i], want) << "replay " << replay << " rank " << r << " element " << i;
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      ccResult_t async = ccSuccess;
      CC_OK(ccCommGetAsyncError(comms[r], &async));
      EXPECT_EQ(async, ccSuccess) << ccGetLastError(comms[r]);
      cudaGraphExecDestroy(execs[r]);
      cudaGraphDestroy(graphs[r]);
      cudaFree(buf[r]);
      cudaStreamDestroy(streams[r]);
      CC_OK(ccCommDestroy(comms[r]));
    }
  });
}

// n GPU ranks made with a config (timeout; maxChannels when given), as a group of
// ccCommInitRankConfig from one thread.
std::vector<ccComm_t> initWithTimeout(int n, int timeoutSeconds, int maxChannels = CC_CONFIG_UNDEF_INT) {
  ccUniqueId id;
  std::vector<ccComm_t> comms(n, nullptr);
  if (ccGetUniqueId(&id) != ccSuccess) return {};
  ccGroupStart();
  for (int r = 0; r < n; ++r) {
    ccConfig_t cfg = CC_CONFIG_INITIALIZER;
    cfg.device = 0;
    cfg.timeout = timeoutSeconds;
    cfg.maxChannels = maxChannels;
    ccCommInitRankConfig(&comms[r], n, id, r, &cfg);
  }
  if (ccGroupEnd() != ccSuccess) return {};
  return comms;
}

// Rank 0's kernel waits for rank 1, which never calls: ccCommAbort makes it leave within a second.
TEST(GpuComm, AbortStopsAStuckKernel) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    std::vector<ccComm_t> comms = initWithTimeout(2, 300);
    ASSERT_EQ(comms.size(), 2u) << ccGetLastError(nullptr);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 1 << 20));
    CC_OK(ccAllReduce(d, d, (1 << 20) / sizeof(float), ccFloat32, ccSum, comms[0], s));
    EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the kernel finished without its peer";
    const auto start = std::chrono::steady_clock::now();
    CC_OK(ccCommAbort(comms[0]));
    CUDA_OK(cudaStreamSynchronize(s));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 1.0) << "ccCommAbort and the stream took " << seconds << " s";
    CC_OK(ccCommDestroy(comms[1]));
    cudaFree(d);
    cudaStreamDestroy(s);
  });
}

// The same wait with a 1 s timeout: the kernel gives up, and the communicator says why, naming
// the peer it waited for.
TEST(GpuComm, StuckKernelTimesOutNamingThePeer) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    std::vector<ccComm_t> comms = initWithTimeout(2, 1);
    ASSERT_EQ(comms.size(), 2u) << ccGetLastError(nullptr);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 4096));
    CC_OK(ccAllReduce(d, d, 1024, ccFloat32, ccSum, comms[0], s));
    const auto start = std::chrono::steady_clock::now();
    CUDA_OK(cudaStreamSynchronize(s));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(seconds, 0.5);
    EXPECT_LT(seconds, 10.0);
    ccResult_t async = ccSuccess;
    CC_OK(ccCommGetAsyncError(comms[0], &async));
    EXPECT_EQ(async, ccTimeout);
    const std::string why = ccGetLastError(comms[0]);
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
    // A failed communicator refuses further work with the reason.
    EXPECT_NE(ccAllReduce(d, d, 1024, ccFloat32, ccSum, comms[0], s), ccSuccess);
    CC_OK(ccCommAbort(comms[0]));
    CC_OK(ccCommAbort(comms[1]));
    cudaFree(d);
    cudaStreamDestroy(s);
  });
}

TEST(GpuComm, RefusesHostMemoryAndMixedStreams) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(60, [] {
    std::vector<ccComm_t> comms(2);
    const int devs[2] = {0, 0};
    CC_OK(ccCommInitAll(comms.data(), 2, devs));
    int device = -1;
    CC_OK(ccCommDevice(comms[0], &device));
    EXPECT_EQ(device, 0);
    std::vector<float> host(16);
    EXPECT_EQ(ccAllReduce(host.data(), host.data(), 16, ccFloat32, ccSum, comms[0], nullptr), ccInvalidArgument);
    EXPECT_NE(std::string(ccGetLastError(comms[0])).find("host memory"), std::string::npos)
        << ccGetLastError(comms[0]);
    float* d = nullptr;
    CUDA_OK(cudaMalloc(&d, 64));
    // One group's point-to-point operations run as one kernel: on one stream.
    cudaStream_t streams[2];
    for (cudaStream_t& st : streams) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    ccGroupStart();
    EXPECT_EQ(ccSend(d, 16, ccFloat32, 1, comms[0], streams[0]), ccSuccess);
    EXPECT_EQ(ccRecv(d, 16, ccFloat32, 1, comms[0], streams[1]), ccSuccess);
    EXPECT_EQ(ccGroupEnd(), ccInvalidUsage);
    EXPECT_NE(std::string(ccGetLastError(nullptr)).find("different streams"), std::string::npos)
        << ccGetLastError(nullptr);
    for (cudaStream_t st : streams) cudaStreamDestroy(st);
    // A host communicator still refuses a stream.
    std::vector<ccComm_t> hostComms(1);
    CC_OK(ccCommInitAll(hostComms.data(), 1, nullptr));
    EXPECT_EQ(ccAllReduce(host.data(), host.data(), 16, ccFloat32, ccSum, hostComms[0],
                          reinterpret_cast<ccStream_t>(0x1)),
              ccInvalidArgument);
    // A device ordinal past the last is an invalid argument.
    int count = 0;
    cudaGetDeviceCount(&count);
    std::vector<ccComm_t> none(1);
    const int bad[1] = {count};
    EXPECT_EQ(ccCommInitAll(none.data(), 1, bad), ccInvalidArgument);
    cudaFree(d);
    for (ccComm_t c : comms) CC_OK(ccCommDestroy(c));
    CC_OK(ccCommDestroy(hostComms[0]));
  });
}

// ccMemAlloc gives device memory of the current device; buffers from it, registered, carry an
// AllReduce of two ranks exactly; host memory cannot be registered with a GPU communicator.
TEST(GpuComm, MemAllocAndRegisteredBuffers) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(120, [] {
    CUDA_OK(cudaSetDevice(0));
    constexpr size_t kCount = 4096;
    std::vector<ccComm_t> comms(2);
    const int devs[2] = {0, 0};
    CC_OK(ccCommInitAll(comms.data(), 2, devs));
    std::vector<const void*> send(2);
    std::vector<void*> recv(2), handles(4, nullptr);
    std::vector<cudaStream_t> streams(2);
    std::vector<float> in(kCount);
    for (int r = 0; r < 2; ++r) {
      void* s = nullptr;
      CC_OK(ccMemAlloc(&s, kCount * sizeof(float)));
      CC_OK(ccMemAlloc(&recv[r], kCount * sizeof(float)));
      cudaPointerAttributes attr{};
      CUDA_OK(cudaPointerGetAttributes(&attr, s));
      EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
      EXPECT_EQ(attr.device, 0);
      for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((r + 1) * (i % 5));
      CUDA_OK(cudaMemcpy(s, in.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
      send[r] = s;
      CC_OK(ccCommRegister(comms[r], s, kCount * sizeof(float), &handles[2 * r]));
      CC_OK(ccCommRegister(comms[r], recv[r], kCount * sizeof(float), &handles[2 * r + 1]));
      CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    }
    std::vector<float> host(kCount);
    void* refused = &refused;
    EXPECT_EQ(ccCommRegister(comms[0], host.data(), host.size() * sizeof(float), &refused), ccInvalidArgument);
    EXPECT_NE(std::string(ccGetLastError(comms[0])).find("not memory of CUDA device 0"), std::string::npos)
        << ccGetLastError(comms[0]);
    EXPECT_EQ(refused, nullptr);
    const std::vector<ccRedOp_t> ops = {ccSum, ccSum};
    std::string why;
    ASSERT_EQ(runGroup(Coll::kAllReduce, comms, send, recv, kCount, ccFloat32, ops, 0, &streams, &why), ccSuccess)
        << why;
    for (int r = 0; r < 2; ++r) {
      CUDA_OK(cudaStreamSynchronize(streams[r]));
      CUDA_OK(cudaMemcpy(host.data(), recv[r], kCount * sizeof(float), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(host[i], static_cast<float>(3 * (i % 5))) << "rank " << r;
    }
    for (int r = 0; r < 2; ++r) {
      CC_OK(ccCommDeregister(comms[r], handles[2 * r]));
      CC_OK(ccCommDeregister(comms[r], handles[2 * r + 1]));
      CC_OK(ccMemFree(const_cast<void*>(send[r])));
      CC_OK(ccMemFree(recv[r]));
      cudaStreamDestroy(streams[r]);
      CC_OK(ccCommDestroy(comms[r]));
    }
  });
}

// ccCommDescribePlan on a GPU communicator: the GPU planner's choices, as its launches make them
// (plan/tuner.cc planGpuCollective: OneShot for a small two-rank AllReduce; Ring with several
// channels for a large one; Simple for both, as the ranks share a device), on the channels' rings.
TEST(GpuComm, DescribesItsPlan) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(60, [] {
    std::vector<ccComm_t> comms(2);
    const int devs[2] = {0, 0};
    CC_OK(ccCommInitAll(comms.data(), 2, devs));
    char json[16384];
    CC_OK(ccCommDescribePlan(comms[1], "AllReduce", 2, ccFloat32, 0, json, sizeof(json), nullptr));
    std::string s = json;
    EXPECT_NE(s.find("\"rank\":1,\"device\":\"gpu\""), std::string::npos) << s;
    // Two ranks sharing a device: Simple at every size (planGpuCollective's measured choice).
    EXPECT_NE(s.find("\"algorithm\":\"OneShot\",\"protocol\":\"Simple\",\"channels\":1,\"on_rings\":true"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("\"rings\":[[0,1]]"), std::string::npos) << s;
    CC_OK(ccCommDescribePlan(comms[0], "AllReduce", size_t{1} << 22, ccFloat32, 0, json, sizeof(json), nullptr));
    s = json;
    EXPECT_NE(s.find("\"algorithm\":\"Ring\",\"protocol\":\"Simple\""), std::string::npos) << s;
    const size_t at = s.find("\"channels\":");
    ASSERT_NE(at, std::string::npos) << s;
    const int channels = atoi(s.c_str() + at + 11);
    EXPECT_GT(channels, 1) << s;
    size_t rings = 0;
    for (size_t p = s.find("[0,1]"); p != std::string::npos; p = s.find("[0,1]", p + 1)) ++rings;
    EXPECT_EQ(rings, static_cast<size_t>(channels)) << s;
    for (ccComm_t c : comms) CC_OK(ccCommDestroy(c));
  });
}

// A maximum alone bounds the channels: 4 rings connected and a large AllReduce on all 4 (a GPU
// communicator given only a maximum used to connect the minimum's one ring).
TEST(GpuComm, MaxChannelsAloneBoundsTheChannels) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(60, [] {
    std::vector<ccComm_t> comms = initWithTimeout(2, 60, 4);
    ASSERT_EQ(comms.size(), 2u) << ccGetLastError(nullptr);
    char json[16384];
    CC_OK(ccCommDescribePlan(comms[0], "AllReduce", size_t{1} << 26, ccFloat32, 0, json, sizeof(json), nullptr));
    const std::string s = json;
    EXPECT_NE(s.find("\"channels\":4,"), std::string::npos) << s;
    for (ccComm_t c : comms) CC_OK(ccCommDestroy(c));
  });
}

// ccGroupSimulateEnd on GPU communicators: ranks sharing a device have no cost model (their
// choices are measured ones), so the group is refused with the reason and left open; with a GPU a
// rank the topology's rings price it (where the machine has two GPUs or more).
TEST(GpuComm, SimulatesWithTheCostModelOnlyWithAGpuARank) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(60, [] {
    std::vector<ccComm_t> comms(2);
    const int shared[2] = {0, 0};
    CC_OK(ccCommInitAll(comms.data(), 2, shared));
    float* buf[2] = {nullptr, nullptr};
    cudaStream_t streams[2];
    for (int r = 0; r < 2; ++r) {
      CUDA_OK(cudaMalloc(&buf[r], 1024 * sizeof(float)));
      CUDA_OK(cudaMemset(buf[r], 0, 1024 * sizeof(float)));
      CUDA_OK(cudaStreamCreate(&streams[r]));
    }
    ccSimInfo_t info = CC_SIM_INFO_INITIALIZER;
    CC_OK(ccGroupStart());
    for (int r = 0; r < 2; ++r) CC_OK(ccAllReduce(buf[r], buf[r], 1024, ccFloat32, ccSum, comms[r], streams[r]));
    EXPECT_EQ(ccGroupSimulateEnd(&info), ccInvalidUsage);
    EXPECT_NE(std::string(ccGetLastError(nullptr)).find("share a device"), std::string::npos)
        << ccGetLastError(nullptr);
    CC_OK(ccGroupEnd());  // the refused group is still open: it runs
    for (int r = 0; r < 2; ++r) {
      CUDA_OK(cudaStreamSynchronize(streams[r]));
      CUDA_OK(cudaStreamDestroy(streams[r]));
      CUDA_OK(cudaFree(buf[r]));
      CC_OK(ccCommDestroy(comms[r]));
    }

    int devices = 0;
    CUDA_OK(cudaGetDeviceCount(&devices));
    if (devices < 2) GTEST_SKIP() << "SKIPPED (the part with a GPU a rank): this machine has " << devices << " GPU";
    const int own[2] = {0, 1};
    CC_OK(ccCommInitAll(comms.data(), 2, own));
    const size_t counts[2] = {size_t{1} << 10, size_t{1} << 24};
    for (int r = 0; r < 2; ++r) {
      CUDA_OK(cudaSetDevice(own[r]));
      CUDA_OK(cudaMalloc(&buf[r], counts[1] * sizeof(float)));
      CUDA_OK(cudaStreamCreate(&streams[r]));
    }
    float times[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      ccSimInfo_t sim = CC_SIM_INFO_INITIALIZER;
      CC_OK(ccGroupStart());
      for (int r = 0; r < 2; ++r) CC_OK(ccAllReduce(buf[r], buf[r], counts[i], ccFloat32, ccSum, comms[r], streams[r]));
      ASSERT_EQ(ccGroupSimulateEnd(&sim), ccSuccess) << ccGetLastError(nullptr);
      times[i] = sim.estimatedTime;
    }
    EXPECT_GT(times[0], 0.0f);
    EXPECT_GT(times[1], times[0]);
    for (int r = 0; r < 2; ++r) {
      CUDA_OK(cudaSetDevice(own[r]));
      CUDA_OK(cudaStreamDestroy(streams[r]));
      CUDA_OK(cudaFree(buf[r]));
      CC_OK(ccCommDestroy(comms[r]));
    }
    CUDA_OK(cudaSetDevice(0));
  });
}

// The sweeps last: the quick checks above report even if a time limit cuts these short.
TEST(GpuComm, TwoRanksMatchHost) { sweep(2); }
TEST(GpuComm, EightRanksMatchHost) { sweep(8); }
TEST(GpuComm, OneRankMatchesHost) { sweep(1); }
TEST(GpuComm, FourRanksMatchHost) { sweep(4); }

// The fused launch (COLLCOMM_GPU_FUSED_LAUNCH=1, device/launch_group.h): the ranks sharing the GPU
// run each ring collective as one kernel of a block per rank and channel. The same sweep, bit for
// bit; the test's groups (one thread drives every rank) then run each rank's share on its worker.
void fusedSweep(int n) {
  setenv("COLLCOMM_GPU_FUSED_LAUNCH", "1", 1);
  sweep(n);
  unsetenv("COLLCOMM_GPU_FUSED_LAUNCH");
}
TEST(GpuComm, FusedLaunchTwoRanksMatchHost) { fusedSweep(2); }
TEST(GpuComm, FusedLaunchEightRanksMatchHost) { fusedSweep(8); }

#endif  // CC_HAVE_CUDA

}  // namespace
}  // namespace collcomm::test
