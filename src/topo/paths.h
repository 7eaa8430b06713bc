// Paths between GPUs, NICs (NET ports) and CPUs: their type (NCCL's LOC..SYS, NET, DIS) and
// bottleneck bandwidth, and the P2P / GPUDirect RDMA / PXN decisions that reshape them.
// Setup tier; computePaths is O(bases x links).
#pragma once

#include <vector>

#include "topo/system.h"

namespace collcomm::detail {

struct PathOptions {
  // Farthest GPU-GPU path on which GPUs talk directly (P2P); farther pairs stage through the CPU.
  PathType p2pLevel = PathType::kPxb;
  bool p2pDisable = false;
  // Farthest GPU-NIC path on which the NIC reads/writes GPU memory (GPUDirect RDMA); farther pairs
  // stage through the GPU's CPU. A P2C path (Grace Hopper) counts as PXB here.
  PathType gdrLevel = PathType::kPxb;
  bool pxnDisable = false;
  bool nvbDisable = false;
};

// Defaults for this system, overridden by COLLCOMM_P2P_LEVEL, COLLCOMM_P2P_DISABLE,
// COLLCOMM_NET_GDR_LEVEL, COLLCOMM_PXN_DISABLE and COLLCOMM_NVB_DISABLE. An unrecognised level
// warns and keeps the default. AMD x86 hosts with at most two GPUs default P2P to SYS.
PathOptions pathOptionsFromEnv(const TopoSystem& sys);

// Fills every GPU/NET/CPU -> GPU/NET/CPU path of *sys:
// 1. shortest path (fewest links, then widest), typed by the links it crosses; a GPU may be
//    crossed only as a one-hop NVLink relay (NVB);
// 2. GPU pairs beyond the P2P level are routed through the first GPU's CPU;
// 3. GPU->NIC paths beyond PXB use an NVLink peer GPU that is within PXB of the NIC (PXN);
// 4. GPU<->NIC pairs without GPUDirect RDMA are routed through the GPU's CPU.
void computePaths(TopoSystem* sys, const PathOptions& opts);

// The pair's P2P and GDR verdicts under opts (paths must be computed).
bool p2pAllowed(const TopoSystem& sys, int gpu1, int gpu2, const PathOptions& opts);
bool gdrAllowed(const TopoSystem& sys, int gpu, int net, const PathOptions& opts);

// Index of the CPU closest to a GPU or NET (fewest links); -1 if there is no CPU.
int localCpu(const TopoSystem& sys, NodeType type, int index);

// The NETs nearest to a GPU (best path type, then bandwidth), in index order.
std::vector<int> nearestNets(const TopoSystem& sys, int gpu);
// One NET per GPU, spreading GPUs that share the same nearest set across it; -1 with no NET.
int preferredNet(const TopoSystem& sys, int gpu);

}  // namespace collcomm::detail
