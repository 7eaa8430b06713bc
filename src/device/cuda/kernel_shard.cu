// One shard of the CUDA kernel table (kernel_table.h): compiled once per shard, with
// CC_CUDA_KERNEL_SHARD set to the shard's number, it instantiates the ring kernels and the tree
// AllReduce kernels whose table index falls in this shard and defines their lookups.
#include "device/cuda/kernel_pairs.h"
#include "device/cuda/kernel_table.h"
#include "device/cuda/ring_kernel.cuh"
#include "device/cuda/tree_kernel.cuh"
#include "device/dtypes.h"

#ifndef CC_CUDA_KERNEL_SHARD
#error "CC_CUDA_KERNEL_SHARD is set by src/device/cuda/CMakeLists.txt"
#endif

// Everything below is a template on the shard number, so its definition is the same in every
// shard's translation unit (one definition rule); only the explicit instantiation at the end
// differs.
namespace collcomm::detail {
namespace cuda_shard {

struct ShardTable {
  const void* kernels[kCudaKernelCount] = {};
  const void* treeKernels[kCudaTreeKernelCount] = {};
};

template <int kShard, CollKind K, ccDataType_t D, RedOpKind O, Protocol P>
void addKernel(ShardTable& t) {
  constexpr int index = cudaKernelIndex(K, D, O, P);
  if constexpr (index % kCudaKernelShards == kShard) {
    using T = typename DtypeTraits<D>::Type;
    t.kernels[index] = reinterpret_cast<const void*>(
        &cudaRingKernel<T, typename RedOpFunc<O, T>::Type, ProtoOf<P>, typename RingAlgoOf<K>::Type>);
  }
}

template <int kShard, CollKind K, ccDataType_t D, RedOpKind O>
void addProtocols(ShardTable& t) {
  addKernel<kShard, K, D, O, Protocol::kSimple>(t);
  addKernel<kShard, K, D, O, Protocol::kLL>(t);
}

template <int kShard, CollKind K>
void addCollective(ShardTable& t) {
  if constexpr (std::is_same_v<typename RingAlgoOf<K>::Type, void>) {
    return;  // no ring kernel (AlltoAll, Gather, Scatter, Send, Recv)
  } else if constexpr (collReduces(K)) {
    forEachTypeOp<ReachableTypeOp>([&]<ccDataType_t D, RedOpKind O>() { addProtocols<kShard, K, D, O>(t); });
  } else {
    addProtocols<kShard, K, ccUint8, RedOpKind::kSum>(t);  // data moves, never combines: bytes
  }
}

template <int kShard, ccDataType_t D, RedOpKind O, Protocol P>
void addTreeKernel(ShardTable& t) {
  constexpr int index = cudaTreeKernelIndex(D, O, P);
  if constexpr (index % kCudaKernelShards == kShard) {
    using T = typename DtypeTraits<D>::Type;
    t.treeKernels[index] =
        reinterpret_cast<const void*>(&cudaTreeKernel<T, typename RedOpFunc<O, T>::Type, ProtoOf<P>>);
  }
}

template <int kShard>
ShardTable makeShardTable() {
  ShardTable t;
#define CC_ADD_COLLECTIVE(kind, name, reduces) addCollective<kShard, CollKind::k##kind>(t);
  CC_COLL_LIST(CC_ADD_COLLECTIVE)
#undef CC_ADD_COLLECTIVE
  forEachTypeOp<ReachableTypeOp>([&]<ccDataType_t D, RedOpKind O>() {
    addTreeKernel<kShard, D, O, Protocol::kSimple>(t);
    addTreeKernel<kShard, D, O, Protocol::kLL>(t);
  });
  return t;
}

}  // namespace cuda_shard

// The shard's table, built on first use (thread-safe: a function-local static).
template <int kShard>
const cuda_shard::ShardTable& cudaShardTable() {
  static const cuda_shard::ShardTable table = cuda_shard::makeShardTable<kShard>();
  return table;
}

template <int kShard>
const void* cudaKernelShardLookup(int index) {
  static_assert(kShard >= 0 && kShard < kCudaKernelShards);
  const cuda_shard::ShardTable& table = cudaShardTable<kShard>();
  return index >= 0 && index < kCudaKernelCount ? table.kernels[index] : nullptr;
}

template <int kShard>
const void* cudaTreeKernelShardLookup(int index) {
  static_assert(kShard >= 0 && kShard < kCudaKernelShards);
  const cuda_shard::ShardTable& table = cudaShardTable<kShard>();
  return index >= 0 && index < kCudaTreeKernelCount ? table.treeKernels[index] : nullptr;
}

template const void* cudaKernelShardLookup<CC_CUDA_KERNEL_SHARD>(int index);
template const void* cudaTreeKernelShardLookup<CC_CUDA_KERNEL_SHARD>(int index);

}  // namespace collcomm::detail
