// The host executor's vector level: CPU detection and COLLCOMM_HOST_SIMD (simd_level.h).
#include "device/host/simd_level.h"

#include <atomic>
#include <string>

#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {
namespace {

bool cpuRuns(SimdLevel level) {
#if defined(__x86_64__) && defined(__GNUC__)
  // libgcc's detection also checks that the OS saves the vector registers (XCR0).
  __builtin_cpu_init();
  switch (level) {
    case SimdLevel::kPortable:
      return true;
    case SimdLevel::kAvx2:
      return __builtin_cpu_supports("avx2");
    case SimdLevel::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return level == SimdLevel::kPortable;
#endif
}

SimdLevel widest() {
  const std::vector<SimdLevel> levels = supportedSimdLevels();
  return levels.back();
}

SimdLevel choose() {
  const std::string want = paramStr(Param::kHostSimd);
  SimdLevel level = widest();
  if (!want.empty() && want != "auto") {
    SimdLevel asked = SimdLevel::kPortable;
    if (want == "avx512") {
      asked = SimdLevel::kAvx512;
    } else if (want == "avx2") {
      asked = SimdLevel::kAvx2;
    } else if (want != "portable") {
      CC_WARN("COLLCOMM_HOST_SIMD=%s is not one of auto, avx512, avx2, portable: using %s", want.c_str(),
              simdLevelName(level));
      return level;
    }
    if (cpuRuns(asked)) {
      level = asked;
    } else {
      CC_WARN("COLLCOMM_HOST_SIMD=%s: this CPU cannot run it; using %s", want.c_str(), simdLevelName(level));
    }
  }
  CC_INFO(kSubsysInit, "host executor vector level: %s", simdLevelName(level));
  return level;
}

}  // namespace

const char* simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kPortable:
      return "portable";
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::vector<SimdLevel> supportedSimdLevels() {
  std::vector<SimdLevel> levels{SimdLevel::kPortable};
  for (SimdLevel l : {SimdLevel::kAvx2, SimdLevel::kAvx512})
    if (cpuRuns(l)) levels.push_back(l);
  return levels;
}

namespace simd_internal {

std::atomic<uint8_t> gLevel{kUnchosen};

SimdLevel chooseOnce() {
  // Racing first calls choose the same level; the first store stays.
  uint8_t expected = kUnchosen;
  gLevel.compare_exchange_strong(expected, static_cast<uint8_t>(choose()), std::memory_order_relaxed);
  return static_cast<SimdLevel>(gLevel.load(std::memory_order_relaxed));
}

}  // namespace simd_internal

bool setHostSimdLevel(SimdLevel level) {
  if (!cpuRuns(level)) return false;
  simd_internal::gLevel.store(static_cast<uint8_t>(level), std::memory_order_relaxed);
  return true;
}

}  // namespace collcomm::detail
