// Link bandwidth model, in GB/s per direction. The numbers are the effective rates NCCL's tuner
// assumes (not signalling rates), so plans made from our graph and NCCL's agree.
#pragma once

#include <string>

#include "topo/system.h"

namespace collcomm::detail {

// The node itself: effectively unlimited.
inline constexpr float kLocBw = 5000.0f;
// Used when a NIC does not report its speed: 100 Gb/s.
inline constexpr float kDefaultNetBw = 12.0f;
// Used when a PCI link's speed or width is unknown: PCIe Gen3 x16.
inline constexpr float kDefaultPciBw = 12.0f;

// One NVLink of a GPU with this compute capability (x10); unknown (0) counts as SM80.
float nvlinkBwPerLink(int sm);
// A PCIe link: GT/s per lane x lanes with 128b/130b-class encoding, e.g. Gen3 x16 = 12, Gen4 x16 =
// 24, Gen5 x16 = 48. Unknown speed counts as Gen3, unknown width as x16.
float pciBw(float gts, int width);
// "8.0 GT/s PCIe", "16 GT/s", "2.5 GT/s" -> GT/s; false when unparsable.
bool parseLinkSpeed(const std::string& s, float* gts);
// The inter-socket link (QPI/UPI, Infinity Fabric, ...) between two CPUs of this kind.
float interCpuBw(const CpuAttrs& cpu);
// A NIC port of this speed (Mb/s); unknown (<= 0) gives kDefaultNetBw.
float netBw(int speedMbps);

}  // namespace collcomm::detail
