// Point-to-point operations on GPU communicators (Send/Recv, AlltoAll, Gather, Scatter): ranks as
// threads of this process sharing GPU 0, each group of one thread's calls one kernel per rank
// (device/cuda/p2p_kernel.cu). Data only moves, so every byte of every result is known: each is
// checked against the pattern its sender wrote, and the bytes after each receive buffer must be
// untouched. Skips, saying why, where no GPU is usable; builds with CUDA only.
#include <gtest/gtest.h>

#if CC_HAVE_CUDA
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collcomm.h"
#include "support/watchdog.h"
#include "unit/gpu/gpu_support.h"

namespace collcomm::test {
namespace {

// kSendRecvAll: AlltoAll as a group of a send to and a receive from every rank (PyTorch's
// all_to_all_single), 2 x ranks transfers.
enum class P2p { kRingSendRecv, kSendRecvAll, kAlltoAll, kGather, kScatter };
const char* p2pLabel(P2p k) {
  static const char* kNames[] = {"Send/Recv ring", "Send/Recv to every rank", "AlltoAll", "Gather", "Scatter"};
  return kNames[static_cast<int>(k)];
}

// The byte rank r writes at offset i of its send buffer in round `round`.
uint8_t pattern(int r, size_t i, int round) { return static_cast<uint8_t>(r * 131 + i * 7 + (i >> 9) + round * 29); }

constexpr uint8_t kUntouched = 0x5a;
constexpr size_t kGuardBytes = 64;

// n GPU ranks on device 0, a stream each, and the buffers of the largest case.
class P2pRanks {
 public:
  P2pRanks(int n, size_t maxBlockBytes) : n_(n), comms_(n), streams_(n), send_(n), recv_(n) {
    const std::vector<int> devs(n, 0);
    if (ccCommInitAll(comms_.data(), n, devs.data()) != ccSuccess) {
      error_ = ccGetLastError(nullptr);
      return;
    }
    bufBytes_ = maxBlockBytes * n + kGuardBytes;
    for (int r = 0; r < n; ++r)
      if (cudaStreamCreateWithFlags(&streams_[r], cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(&send_[r], bufBytes_) != cudaSuccess || cudaMalloc(&recv_[r], bufBytes_) != cudaSuccess) {
        error_ = "CUDA could not make a stream or a buffer";
        return;
      }
  }
  ~P2pRanks() {
    for (int r = 0; r < n_; ++r) {
      if (streams_[r] != nullptr) cudaStreamDestroy(streams_[r]);
      if (send_[r] != nullptr) cudaFree(send_[r]);
      if (recv_[r] != nullptr) cudaFree(recv_[r]);
      if (comms_[r] != nullptr) ccCommDestroy(comms_[r]);
    }
  }
  const std::string& error() const { return error_; }

  // Runs operation k moving `bytes` per block (as ccUint8 elements, or `dtype` elements when the
  // size divides) in round `round` on every rank in one group; returns "" or what went wrong.
  std::string check(P2p k, size_t bytes, int root, int round) {
    const size_t n = static_cast<size_t>(n_);
    const size_t sendSpan = k == P2p::kAlltoAll || k == P2p::kSendRecvAll || k == P2p::kScatter ? bytes * n : bytes;
    for (int r = 0; r < n_; ++r) {
      std::vector<uint8_t> in(sendSpan);
      for (size_t i = 0; i < in.size(); ++i) in[i] = pattern(r, i, round);
      if (cudaMemcpy(send_[r], in.data(), sendSpan, cudaMemcpyHostToDevice) != cudaSuccess ||
          cudaMemset(recv_[r], kUntouched, bufBytes_) != cudaSuccess)
        return "uploading the inputs failed";
    }
    // The uploads land before the kernels, which run on non-blocking streams.
    if (cudaDeviceSynchronize() != cudaSuccess) return "cudaDeviceSynchronize failed";
    const ccDataType_t t = bytes % 8 == 0 ? ccFloat64 : ccUint8;
    const size_t count = bytes / (t == ccFloat64 ? 8 : 1);
    std::string refused;
    ccGroupStart();
    for (int r = 0; r < n_; ++r) {
      const ccComm_t c = comms_[r];
      const cudaStream_t s = streams_[r];
      ccResult_t res = ccSuccess;
      switch (k) {
        case P2p::kRingSendRecv:
          res = ccSend(send_[r], count, t, (r + 1) % n_, c, s);
          if (res == ccSuccess) res = ccRecv(recv_[r], count, t, (r + n_ - 1) % n_, c, s);
          break;
        case P2p::kSendRecvAll:
          for (int p = 0; p < n_ && res == ccSuccess; ++p) {
            res = ccSend(static_cast<char*>(send_[r]) + p * bytes, count, t, p, c, s);
            if (res == ccSuccess) res = ccRecv(static_cast<char*>(recv_[r]) + p * bytes, count, t, p, c, s);
          }
          break;
        case P2p::kAlltoAll: res = ccAlltoAll(send_[r], recv_[r], count, t, c, s); break;
        case P2p::kGather: res = ccGather(send_[r], recv_[r], count, t, root, c, s); break;
        case P2p::kScatter: res = ccScatter(send_[r], recv_[r], count, t, root, c, s); break;
      }
      if (res != ccSuccess && refused.empty()) refused = "rank " + std::to_string(r) + ": " + ccGetLastError(c);
    }
    const ccResult_t end = ccGroupEnd();
    if (!refused.empty()) return "refused: " + refused;
    if (end != ccSuccess) return std::string("ccGroupEnd: ") + ccGetLastError(nullptr);
    for (int r = 0; r < n_; ++r)
      if (cudaStreamSynchronize(streams_[r]) != cudaSuccess) return "cudaStreamSynchronize failed";
    for (int r = 0; r < n_; ++r) {
      ccResult_t async = ccSuccess;
      ccCommGetAsyncError(comms_[r], &async);
      if (async != ccSuccess) return std::string("rank ") + std::to_string(r) + "'s kernel failed: " +
                                     ccGetLastError(comms_[r]);
    }
    for (int r = 0; r < n_; ++r) {
      std::vector<uint8_t> out(bufBytes_);
      if (cudaMemcpy(out.data(), recv_[r], bufBytes_, cudaMemcpyDeviceToHost) != cudaSuccess)
        return "downloading the results failed";
      // expected(i): the byte at offset i of rank r's receive buffer; its span: how far results go.
      size_t span = 0;
      auto expected = [&](size_t i) -> uint8_t {
        const size_t block = bytes == 0 ? 0 : i / bytes, at = bytes == 0 ? 0 : i % bytes;
        switch (k) {
          case P2p::kRingSendRecv: return pattern((r + n_ - 1) % n_, i, round);
          case P2p::kSendRecvAll:
          case P2p::kAlltoAll: return pattern(static_cast<int>(block), r * bytes + at, round);
          case P2p::kGather: return pattern(static_cast<int>(block), at, round);
          case P2p::kScatter: return pattern(root, r * bytes + i, round);
        }
        return 0;
      };
      switch (k) {
        case P2p::kRingSendRecv:
        case P2p::kScatter: span = bytes; break;
        case P2p::kSendRecvAll:
        case P2p::kAlltoAll: span = bytes * n; break;
        case P2p::kGather: span = r == root ? bytes * n : 0; break;
      }
      for (size_t i = 0; i < bufBytes_; ++i) {
        const uint8_t want = i < span ? expected(i) : kUntouched;
        if (out[i] != want) {
          char msg[200];
          snprintf(msg, sizeof(msg), "rank %d byte %zu of %zu: 0x%02x, expected 0x%02x%s", r, i, span, out[i], want,
                   i < span ? "" : " (past the result: untouched)");
          return msg;
        }
      }
    }
    return "";
  }

 private:
  int n_;
  size_t bufBytes_ = 0;
  std::string error_;
  std::vector<ccComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> send_, recv_;
};

// Every operation at sizes of nothing, one byte, an odd size and several FIFO steps, every root
// (the first and last at the largest size); two rounds each, so the second runs over connections
// whose step counters the first advanced.
void sweepP2p(int n, std::vector<P2p> kinds = {P2p::kRingSendRecv, P2p::kSendRecvAll, P2p::kAlltoAll, P2p::kGather,
                                               P2p::kScatter}) {
  SKIP_WITHOUT_GPU();
  runWithWatchdog(300, [&] {
    const size_t sizes[] = {0, 1, 4099, (size_t{3} << 20) + 8};
    P2pRanks ranks(n, sizes[3]);
    ASSERT_EQ(ranks.error(), "");
    for (P2p k : kinds)
      for (size_t bytes : sizes)
        for (int root = 0; root < (k == P2p::kGather || k == P2p::kScatter ? n : 1); ++root) {
          if (bytes == sizes[3] && root != 0 && root != n - 1) continue;
          for (int round = 0; round < 2; ++round) {
            const std::string wrong = ranks.check(k, bytes, root, round);
            ASSERT_EQ(wrong, "") << n << " ranks, " << p2pLabel(k) << ", " << bytes << " bytes, root " << root
                                 << ", round " << round;
          }
        }
  });
}

TEST(GpuP2p, OneRankMovesToItself) { sweepP2p(1); }
TEST(GpuP2p, TwoRanks) { sweepP2p(2); }
TEST(GpuP2p, FourRanks) { sweepP2p(4); }
TEST(GpuP2p, EightRanks) { sweepP2p(8); }

// Beyond the transfers one kernel moves, a batch runs as kernels one after another, each over the
// peers at some distances (core/p2p_rounds.h): here four transfers a kernel (two distances), and
// 18 ranks' AlltoAll, its send/recv form and Gather beyond the kernel's own 32.
TEST(GpuP2p, EightRanksInRoundsOfFourTransfers) {
  setenv("COLLCOMM_P2P_MAX_TRANSFERS", "4", 1);
  sweepP2p(8);
  unsetenv("COLLCOMM_P2P_MAX_TRANSFERS");
}
TEST(GpuP2p, EighteenRanksAlltoAllAndGatherInRounds) {
  sweepP2p(18, {P2p::kAlltoAll, P2p::kSendRecvAll, P2p::kGather});
}

}  // namespace
}  // namespace collcomm::test

#endif  // CC_HAVE_CUDA
