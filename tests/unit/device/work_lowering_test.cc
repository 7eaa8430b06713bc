// The one path from a collective to what each algorithm runs: ExecColl -> CollWork (collWorkOf),
// CollWork -> a channel's RingWork/TreeWork (channelWorkOf, treeWorkOf) and DirectWork
// (directWorkOf), the byte-wise lowering of Broadcast/AllGather (lowerToBytes), and the (type,
// reduction) walk the CUDA kernel families are instantiated over (device/cuda/kernel_pairs.h, plain
// C++ so it is checked here too).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "collectives/direct.h"
#include "collectives/tree_all_reduce.h"
#include "device/cuda/kernel_pairs.h"
#include "device/executor.h"

namespace collcomm::detail {
namespace {

CollWork sampleWork() {
  ExecColl c{};
  c.kind = CollKind::kReduce;
  c.algo = Algorithm::kRing;
  c.proto = Protocol::kLL;
  c.dtype = ccFloat32;
  c.op = RedOpSpec{RedOpKind::kPreMulSum, 0x3f000000};
  c.sendbuff = reinterpret_cast<const void*>(0x1000);
  c.recvbuff = reinterpret_cast<void*>(0x2000);
  c.count = 10;
  c.root = 2;
  c.nChannels = 3;
  return collWorkOf(c, 4);
}

TEST(WorkLowering, CollWorkCarriesTheCall) {
  const CollWork w = sampleWork();
  EXPECT_EQ(w.kind, CollKind::kReduce);
  EXPECT_EQ(w.algo, Algorithm::kRing);
  EXPECT_EQ(w.proto, Protocol::kLL);
  EXPECT_EQ(w.dtype, ccFloat32);
  EXPECT_EQ(w.op.kind, RedOpKind::kPreMulSum);
  EXPECT_EQ(w.op.opArg, 0x3f000000u);
  EXPECT_EQ(w.sendbuff, reinterpret_cast<const void*>(0x1000));
  EXPECT_EQ(w.recvbuff, reinterpret_cast<void*>(0x2000));
  EXPECT_EQ(w.count, 10u);
  EXPECT_EQ(w.root, 2);
  EXPECT_EQ(w.nranks, 4);
  EXPECT_EQ(w.nChannels, 3);
}

TEST(WorkLowering, ChannelsSplitTheCountAndChunkByTheirStep) {
  const CollWork a = sampleWork();
  const int ring[4] = {0, 3, 1, 2};
  const size_t offsets[3] = {0, 4, 8}, counts[3] = {4, 4, 2};
  for (int c = 0; c < 3; ++c) {
    const RingWork w = channelWorkOf(a, c, 1, ring, 7);
    EXPECT_EQ(w.sendbuff, a.sendbuff);
    EXPECT_EQ(w.recvbuff, a.recvbuff);
    EXPECT_EQ(w.count, 10u);
    EXPECT_EQ(w.partOffset, offsets[c]) << "channel " << c;
    EXPECT_EQ(w.partCount, counts[c]) << "channel " << c;
    EXPECT_EQ(w.chunkElems, 7 * kChunkSteps);
    EXPECT_EQ(w.algo, Algorithm::kRing);
    EXPECT_EQ(w.root, 2);
    EXPECT_EQ(w.nranks, 4);
    EXPECT_EQ(w.ringPos, 1);
    EXPECT_EQ(w.ringRanks, ring);
    EXPECT_EQ(ringPosOf(w, 2), 3);
  }
}

TEST(WorkLowering, TreeChannelsTakeTheRingsShareAndTheirLinksShape) {
  const CollWork a = sampleWork();
  SendConn up{}, down{};
  RecvConn in{};
  TreeLinks leaf{&up, &in, {nullptr, nullptr}, {nullptr, nullptr}};
  TreeLinks root{nullptr, nullptr, {&down, &down}, {&in, &in}};
  for (int c = 0; c < 3; ++c) {
    const RingWork ring = channelWorkOf(a, c, 0, nullptr, 5);
    for (const TreeLinks* l : {&leaf, &root}) {
      const TreeWork w = treeWorkOf(a, c, *l, 5);
      EXPECT_EQ(w.sendbuff, a.sendbuff);
      EXPECT_EQ(w.recvbuff, a.recvbuff);
      EXPECT_EQ(w.partOffset, ring.partOffset);
      EXPECT_EQ(w.partCount, ring.partCount);
      EXPECT_EQ(w.chunkElems, ring.chunkElems);
      EXPECT_EQ(w.root, l == &root);
      EXPECT_EQ(w.nChildren, l == &root ? 2 : 0);
    }
  }
}

TEST(WorkLowering, CopyCollectivesRunAsBytes) {
  CollWork w = sampleWork();
  w.kind = CollKind::kAllGather;
  w.dtype = ccFloat64;
  lowerToBytes(&w);
  EXPECT_EQ(w.count, 80u);
  EXPECT_EQ(w.dtype, ccUint8);
  EXPECT_EQ(w.op.kind, RedOpKind::kSum);
  EXPECT_EQ(w.op.opArg, 0u);
}

TEST(WorkLowering, DirectWorkCarriesTheCallAndTheScratch) {
  CollWork a = sampleWork();
  a.kind = CollKind::kAllReduce;
  a.dtype = ccFloat16;
  ExecPeerConn peers[4] = {};
  DirectDesc descs[4] = {};
  uint64_t tokens[4] = {};
  ExecTransfer transfers[6] = {};
  char chunk[8];
  const DirectWork w = directWorkOf(a, ccMax, 0x3c00, 3, peers, descs, tokens, transfers, chunk);
  EXPECT_EQ(w.kind, CollKind::kAllReduce);
  EXPECT_EQ(w.sendbuff, a.sendbuff);
  EXPECT_EQ(w.recvbuff, a.recvbuff);
  EXPECT_EQ(w.count, 10u);
  EXPECT_EQ(w.elemSize, 2u);
  EXPECT_EQ(w.dtype, static_cast<int32_t>(ccFloat16));
  EXPECT_EQ(w.builtinOp, static_cast<int32_t>(ccMax));
  EXPECT_EQ(w.opArg, 0x3c00u);
  EXPECT_EQ(w.callTag, callTagOf(a));
  EXPECT_EQ(w.root, 2);
  EXPECT_EQ(w.rank, 3);
  EXPECT_EQ(w.nranks, 4);
  EXPECT_EQ(w.peers, peers);
  EXPECT_EQ(w.descs, descs);
  EXPECT_EQ(w.tokens, tokens);
  EXPECT_EQ(w.transfers, transfers);
  EXPECT_EQ(w.chunk, static_cast<void*>(chunk));
}

// A stand-in kernel: one distinct handle per instantiation.
template <class T, class Fn>
struct FakeKernel {
  static const void* get() {
    static char tag;
    return &tag;
  }
};

// Selections of the walk's own: every pair, and Sum on every type with every reduction on float.
struct EveryTypeOp {
  static constexpr bool has(ccDataType_t, RedOpKind) { return true; }
};
struct SumEverywhereAllOnFloat {
  static constexpr bool has(ccDataType_t d, RedOpKind o) { return o == RedOpKind::kSum || d == ccFloat32; }
};

TEST(KernelPairs, TheWalkVisitsExactlyTheSelectedPairs) {
  static_assert(typeOpCount<EveryTypeOp>() == ccNumTypes * kRedOpKindCount);
  static_assert(typeOpCount<SumEverywhereAllOnFloat>() == 17);
  std::vector<std::pair<int, int>> seen;
  forEachTypeOp<EveryTypeOp>(
      [&]<ccDataType_t D, RedOpKind O>() { seen.emplace_back(static_cast<int>(D), static_cast<int>(O)); });
  ASSERT_EQ(seen.size(), static_cast<size_t>(ccNumTypes * kRedOpKindCount));
  for (int d = 0; d < ccNumTypes; ++d)
    for (int o = 0; o < kRedOpKindCount; ++o) EXPECT_EQ(seen[d * kRedOpKindCount + o], std::make_pair(d, o));
}

TEST(KernelPairs, LookupFindsTheSelectedKernelOfEachPairAndNothingElse) {
  std::set<const void*> handles;
  for (int d = 0; d < ccNumTypes; ++d)
    for (int o = 0; o < kRedOpKindCount; ++o) {
      const auto dtype = static_cast<ccDataType_t>(d);
      const auto op = static_cast<RedOpKind>(o);
      const void* k = kernelForTypeOp<FakeKernel, SumEverywhereAllOnFloat>(dtype, op);
      EXPECT_EQ(k != nullptr, SumEverywhereAllOnFloat::has(dtype, op)) << "type " << d << " op " << o;
      if (k != nullptr) handles.insert(k);
      EXPECT_NE((kernelForTypeOp<FakeKernel, EveryTypeOp>(dtype, op)), nullptr);
    }
  EXPECT_EQ(handles.size(), 17u);
  EXPECT_EQ((kernelForTypeOp<FakeKernel, EveryTypeOp>(ccFloat32, RedOpKind::kMax)),
            (FakeKernel<float, FuncMax<float>>::get()));
  EXPECT_EQ((kernelForTypeOp<FakeKernel, EveryTypeOp>(ccInt32, RedOpKind::kSumPostDiv)),
            (FakeKernel<int32_t, FuncSumPostDiv<int32_t>>::get()));
  EXPECT_EQ((kernelForTypeOp<FakeKernel, EveryTypeOp>(static_cast<ccDataType_t>(ccNumTypes), RedOpKind::kSum)),
            nullptr);
  EXPECT_EQ((kernelForTypeOp<FakeKernel, EveryTypeOp>(ccFloat32, static_cast<RedOpKind>(kRedOpKindCount))), nullptr);
}

}  // namespace
}  // namespace collcomm::detail
