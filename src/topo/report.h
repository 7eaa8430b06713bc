// Human and machine views of a TopoSystem, as cc-topo prints them. Setup tier.
#pragma once

#include <string>

#include "topo/paths.h"
#include "topo/system.h"

namespace collcomm::detail {

// The system as a tree: each CPU, the PCI switches, GPUs and NICs under it with the bandwidth of
// the link above each, NVLink/C2C links of GPUs, NIC ports, and the inter-CPU links.
std::string formatTopoTree(const TopoSystem& sys);

// GPUxGPU and GPUxNIC path matrices ("TYPE/GB/s", with '*' where traffic is staged through a CPU
// because P2P or GPUDirect RDMA is not allowed) and each GPU's nearest NIC.
std::string formatTopoMatrices(const TopoSystem& sys);

// One JSON object: gpus [{index, busid, sm, numa}], nics [{index, name, busid, speed_mbps, numa}],
// cpus [{numa, arch, vendor}], paths {gpu_gpu, gpu_nic: matrices of {type, bw_gbps}},
// nearest_nic [per GPU: NIC index or -1], and source.
std::string formatTopoJson(const TopoSystem& sys);

// The NUMA id of the CPU nearest to a GPU or NET node; -1 when there is none.
int numaOf(const TopoSystem& sys, NodeType type, int index);

}  // namespace collcomm::detail
