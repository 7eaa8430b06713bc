// One launch per group (device/group_batch.h, device/cuda/cuda_args.h): which of a group's
// collectives one ring kernel carries together, and what each block reads as work i. Plain C++:
// the CUDA executor's runGroup cuts its launches with this rule, and its kernel reads groupWorkOf.
#include "device/group_batch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/cuda/cuda_args.h"

namespace collcomm::detail {
namespace {

// Buffers of their own for each slot: 16 MiB apart, input then output.
const void* inputOf(int slot) {
  return reinterpret_cast<const void*>(uintptr_t{0x10000000} + (static_cast<uintptr_t>(slot) << 24));
}
void* outputOf(int slot) {
  return reinterpret_cast<void*>(uintptr_t{0x10800000} + (static_cast<uintptr_t>(slot) << 24));
}

ExecColl allReduce(size_t count, int slot = 0) {
  ExecColl c{};
  c.sendbuff = inputOf(slot);
  c.recvbuff = outputOf(slot);
  c.kind = CollKind::kAllReduce;
  c.algo = Algorithm::kRing;
  c.proto = Protocol::kSimple;
  c.dtype = ccFloat32;
  c.op = RedOpSpec{RedOpKind::kSum, 0};
  c.count = count;
  c.nChannels = 2;
  return c;
}

TEST(GroupBatch, LikeCollectivesShareALaunchUpToTheTable) {
  std::vector<ExecColl> g;
  for (int i = 0; i < 20; ++i) g.push_back(allReduce(100 + i, i));  // counts, buffers and channels may differ
  g[3].nChannels = 7;
  EXPECT_EQ(ringGroupEnd(g.data(), 0, g.size(), 4, kCudaMaxGroupWorks), 16u);
  EXPECT_EQ(ringGroupEnd(g.data(), 16, g.size(), 4, kCudaMaxGroupWorks), 20u);
  const ExecColl alone = allReduce(1);
  EXPECT_EQ(ringGroupEnd(&alone, 0, 1, 4, kCudaMaxGroupWorks), 1u);
  EXPECT_EQ(ringGroupEnd(g.data(), 0, g.size(), 4, 1), 1u);
}

TEST(GroupBatch, AnyDifferenceInTheKernelEndsTheRun) {
  auto endWith = [](auto change) {
    std::vector<ExecColl> g;
    for (int i = 0; i < 4; ++i) g.push_back(allReduce(64, i));
    change(g[2]);
    return ringGroupEnd(g.data(), 0, g.size(), 4, kCudaMaxGroupWorks);
  };
  EXPECT_EQ(endWith([](ExecColl&) {}), 4u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.kind = CollKind::kReduceScatter; }), 2u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.dtype = ccFloat64; }), 2u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.proto = Protocol::kLL; }), 2u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.op.kind = RedOpKind::kMax; }), 2u);
  // A PreMulSum's scalar is the work's own: the same reduction kind with another argument joins.
  EXPECT_EQ(endWith([](ExecColl& c) { c.op.opArg = 42; }), 4u);
  // Kernels of their own: the tree, the one-shot beyond two ranks, Direct.
  EXPECT_EQ(endWith([](ExecColl& c) { c.algo = Algorithm::kTree; }), 2u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.algo = Algorithm::kOneShot; }), 2u);
  EXPECT_EQ(endWith([](ExecColl& c) { c.algo = Algorithm::kDirect; }), 2u);
}

TEST(GroupBatch, ReductionsMatterOnlyWhereTheKindReduces) {
  std::vector<ExecColl> g;
  for (int i = 0; i < 3; ++i) g.push_back(allReduce(64, i));
  for (ExecColl& c : g) c.kind = CollKind::kAllGather;
  g[1].op.kind = RedOpKind::kMax;  // AllGather copies: its reduction is never read
  EXPECT_EQ(ringGroupEnd(g.data(), 0, g.size(), 4, kCudaMaxGroupWorks), 3u);
}

TEST(GroupBatch, CollectivesOnTheirOwnKernelsLaunchAlone) {
  std::vector<ExecColl> g;
  for (int i = 0; i < 3; ++i) g.push_back(allReduce(64, i));
  g[0].algo = Algorithm::kTree;
  EXPECT_EQ(ringGroupEnd(g.data(), 0, g.size(), 4, kCudaMaxGroupWorks), 1u);
  EXPECT_EQ(ringGroupEnd(g.data(), 1, g.size(), 4, kCudaMaxGroupWorks), 3u);
  // On two ranks the one-shot AllReduce is the ring kernel's (its algo field), and one rank has no tree.
  g[0].algo = Algorithm::kOneShot;
  EXPECT_TRUE(runsOnRingKernels(g[0], 2));
  EXPECT_FALSE(runsOnRingKernels(g[0], 3));
  g[0].algo = Algorithm::kTree;
  EXPECT_TRUE(runsOnRingKernels(g[0], 1));
}

// The blocks of one launch run its works each at its own pace: a work that reads what an earlier
// one of the run writes, or writes what it reads or writes, starts a launch of its own.
TEST(GroupBatch, WorksThatDependOnEarlierOnesStartANewLaunch) {
  auto endOf = [](std::vector<ExecColl> g) { return ringGroupEnd(g.data(), 0, g.size(), 4, kCudaMaxGroupWorks); };
  ExecColl a = allReduce(100, 0), b = allReduce(300000, 1), c = allReduce(64, 2);
  EXPECT_EQ(endOf({a, b, c}), 3u);
  // Reads what an earlier one writes (a -> y, then y -> z), also in part.
  b.sendbuff = static_cast<const char*>(a.recvbuff) + 396;
  EXPECT_EQ(endOf({a, b, c}), 1u);
  EXPECT_EQ(endOf({c, a, b}), 2u);
  b.sendbuff = static_cast<const char*>(a.recvbuff) + 400;  // just past it: independent
  EXPECT_EQ(endOf({a, b, c}), 3u);
  // Writes what an earlier one reads, or writes too.
  b = allReduce(300000, 1);
  b.recvbuff = const_cast<void*>(a.sendbuff);
  EXPECT_EQ(endOf({a, b}), 1u);
  b.recvbuff = a.recvbuff;
  EXPECT_EQ(endOf({a, b}), 1u);
  // A device scalar an earlier one writes (or that a later one overwrites).
  b = allReduce(300000, 1);
  b.op = RedOpSpec{RedOpKind::kPreMulSum, 0, static_cast<char*>(a.recvbuff) + 8};
  a.op.kind = RedOpKind::kPreMulSum;
  EXPECT_EQ(endOf({a, b}), 1u);
  EXPECT_EQ(endOf({b, a}), 1u);
  // In place, each on buffers of its own: together.
  a = allReduce(100, 0);
  b = allReduce(100, 1);
  a.recvbuff = const_cast<void*>(a.sendbuff);
  b.recvbuff = const_cast<void*>(b.sendbuff);
  EXPECT_EQ(endOf({a, b}), 2u);
  // AllGather writes nranks blocks, ReduceScatter reads them.
  ExecColl g0 = allReduce(1000, 0), g1 = allReduce(1000, 1);
  g0.kind = g1.kind = CollKind::kAllGather;
  g1.sendbuff = static_cast<const char*>(g0.recvbuff) + 3 * 4000;  // g0's fourth rank's block
  EXPECT_EQ(endOf({g0, g1}), 1u);
  ExecColl r0 = allReduce(1000, 0), r1 = allReduce(1000, 1);
  r0.kind = r1.kind = CollKind::kReduceScatter;
  r1.recvbuff = const_cast<char*>(static_cast<const char*>(r0.sendbuff)) + 3 * 4000;
  EXPECT_EQ(endOf({r0, r1}), 1u);
}

TEST(GroupBatch, EachWorkReplacesWhatDiffersAndKeepsTheRest) {
  CudaCollArgs a{};
  static_cast<CollWork&>(a) = collWorkOf(allReduce(10), 4);
  const CollWork base = a;
  EXPECT_EQ(groupWorkOf(a, base, 0).count, 10u);  // no works: the launch's own collective
  a.nWorks = 2;
  int x = 0, y = 0;
  a.works[1] = CudaGroupWork{&x, &y, 77, RedOpSpec{RedOpKind::kPreMulSum, 5}, 3, 1, Algorithm::kOneShot};
  const CollWork w = groupWorkOf(a, base, 1);
  EXPECT_EQ(w.sendbuff, &x);
  EXPECT_EQ(w.recvbuff, &y);
  EXPECT_EQ(w.count, 77u);
  EXPECT_EQ(w.op.kind, RedOpKind::kPreMulSum);
  EXPECT_EQ(w.op.opArg, 5u);
  EXPECT_EQ(w.root, 3);
  EXPECT_EQ(w.nChannels, 1);
  EXPECT_EQ(w.algo, Algorithm::kOneShot);
  EXPECT_EQ(w.kind, CollKind::kAllReduce);  // the launch's, for every work
  EXPECT_EQ(w.dtype, ccFloat32);
  EXPECT_EQ(w.nranks, 4);
  EXPECT_EQ(w.proto, Protocol::kSimple);
}

}  // namespace
}  // namespace collcomm::detail
