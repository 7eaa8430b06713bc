// Bandwidth constants by hardware generation; see bandwidth.h for the units and the sources.
#include "topo/bandwidth.h"

#include <cstdlib>

namespace collcomm::detail {

float nvlinkBwPerLink(int sm) {
  if (sm >= 100) return 40.1f;  // Blackwell (NVLink 5)
  if (sm >= 90) return 20.6f;   // Hopper (NVLink 4)
  if (sm == 86 || sm == 87 || sm == 89) return 12.0f;  // GA10x / AD10x bridges
  if (sm >= 80) return 20.0f;   // A100 (NVLink 3)
  if (sm >= 70) return 20.0f;   // V100 (NVLink 2)
  if (sm >= 60) return 18.0f;   // P100 (NVLink 1)
  return 20.0f;
}

float pciBw(float gts, int width) {
  if (gts <= 0) gts = 8.0f;
  if (width <= 0) width = 16;
  // Effective Gb/s per lane per GT/s: 6 under Gen1/2's 8b/10b, 7.5 under Gen3+'s 128b/130b after
  // protocol overhead (NCCL's figures; Gen3 x16 = 12 GB/s).
  float gbpsPerLane = gts * (gts < 8.0f ? 6.0f : 7.5f) / 10.0f;
  return gbpsPerLane * static_cast<float>(width) / 8.0f;
}

bool parseLinkSpeed(const std::string& s, float* gts) {
  const char* p = s.c_str();
  char* end = nullptr;
  double v = std::strtod(p, &end);
  if (end == p || v <= 0 || v > 1000) return false;
  while (*end == ' ') ++end;
  if (*end != '\0' && std::string(end).rfind("GT/s", 0) != 0) return false;
  *gts = static_cast<float>(v);
  return true;
}

float interCpuBw(const CpuAttrs& cpu) {
  if (cpu.arch == "ppc64") return 32.0f;  // POWER9 X-bus
  if (cpu.arch == "arm64") return 6.0f;
  if (cpu.arch != "x86_64") return kLocBw;
  if (cpu.vendor == "GenuineIntel") {
    if (cpu.familyId == 6 && cpu.modelId >= 0xcf) return 40.0f;  // Emerald Rapids and later
    if (cpu.familyId == 6 && cpu.modelId >= 0x8f) return 22.0f;  // Sapphire Rapids
    if (cpu.familyId == 6 && cpu.modelId >= 0x55) return 10.0f;  // Skylake .. Ice Lake (UPI)
    return 6.0f;                                                  // Broadwell and older (QPI)
  }
  if (cpu.vendor == "AuthenticAMD") {
    if (cpu.familyId >= 0x1a) return 32.0f;  // Zen 5
    if (cpu.familyId == 0x19) return 24.0f;  // Zen 3/4
    return 16.0f;                            // Zen 1/2
  }
  if (cpu.vendor == "CentaurHauls" || cpu.vendor == "  Shanghai  ")
    return cpu.familyId == 7 && cpu.modelId == 0x5b ? 9.0f : 6.0f;  // Zhaoxin Yongfeng / older
  return 6.0f;
}

float netBw(int speedMbps) { return speedMbps > 0 ? static_cast<float>(speedMbps) / 8000.0f : kDefaultNetBw; }

}  // namespace collcomm::detail
