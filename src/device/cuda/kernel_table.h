// The CUDA kernel table: where the kernel for (collective, dtype, reduction, protocol) is found,
// and the tree AllReduce's for (dtype, reduction, protocol).
//
// Every entry is instantiated in kernel_shard.cu from CC_COLL_LIST and the (type, reduction) walk
// of kernel_pairs.h: the reducing collectives for every dtype x reachable reduction (redOpKindReachable)
// x protocol, the
// byte-wise ones (Broadcast, AllGather) only at (ccUint8, kSum, protocol). The table is split
// over kCudaKernelShards translation units, the kernel at index i living in shard
// i % kCudaKernelShards, so that a parallel build compiles them side by side. Unreachable pairs keep
// their index and a null entry.
// Plain C++: no CUDA header.
#pragma once

#include "collcomm.h"
#include "collectives/coll_list.h"
#include "device/reduce_ops.h"

#ifndef CC_CUDA_KERNEL_SHARDS
#error "CC_CUDA_KERNEL_SHARDS is set by src/device/cuda/CMakeLists.txt"
#endif

namespace collcomm::detail {

inline constexpr int kCollKindCount = 0
#define CC_COLL_COUNT(kind, name, reduces) +1
    CC_COLL_LIST(CC_COLL_COUNT)
#undef CC_COLL_COUNT
    ;

inline constexpr int kProtocolCount = 2;
static_assert(static_cast<int>(Protocol::kSimple) == 0 && static_cast<int>(Protocol::kLL) == 1);

inline constexpr int kCudaKernelCount = kCollKindCount * ccNumTypes * kRedOpKindCount * kProtocolCount;
inline constexpr int kCudaKernelShards = CC_CUDA_KERNEL_SHARDS;

constexpr int cudaKernelIndex(CollKind k, ccDataType_t d, RedOpKind o, Protocol p) {
  return ((static_cast<int>(k) * ccNumTypes + static_cast<int>(d)) * kRedOpKindCount + static_cast<int>(o)) *
             kProtocolCount +
         static_cast<int>(p);
}

// The tree AllReduce kernels (tree_kernel.cuh), every dtype x reduction x protocol as the ring
// AllReduce: a table of their own, spread over the same shards by the same rule (index i in shard
// i % kCudaKernelShards), so each shard compiles a few beside its ring kernels.
inline constexpr int kCudaTreeKernelCount = ccNumTypes * kRedOpKindCount * kProtocolCount;

constexpr int cudaTreeKernelIndex(ccDataType_t d, RedOpKind o, Protocol p) {
  return (static_cast<int>(d) * kRedOpKindCount + static_cast<int>(o)) * kProtocolCount + static_cast<int>(p);
}

// Defined by shard kShard (kernel_shard.cu, compiled once per shard): the host-side handle
// (for cudaLaunchKernel) of the kernel at `index`, which must belong to this shard; null where
// the table has no kernel. Thread-safe; the first call builds the shard's table.
template <int kShard>
const void* cudaKernelShardLookup(int index);
// The same for the tree AllReduce kernel at cudaTreeKernelIndex `index`.
template <int kShard>
const void* cudaTreeKernelShardLookup(int index);

}  // namespace collcomm::detail
