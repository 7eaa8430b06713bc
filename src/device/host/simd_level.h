// Which vector instructions the host executor's element loops use (data path: read once per
// reduceCopy call, one relaxed load).
//
// The library is built for the x86-64 baseline (SSE2), so that it runs on every x86-64 CPU. The
// element loop of reduceCopy (device/reduce_copy.h) is also compiled for AVX2 and for AVX-512
// (except for fp8, which converts through double and no vector width speeds up) and the widest
// one this CPU and OS support is taken at run time; COLLCOMM_HOST_SIMD picks a narrower one
// (auto, avx512, avx2 or portable). All levels give the same bits: they are the same loop, every
// operation rounded as written (the library is built with -ffp-contract=off, so no product is
// fused into a sum where AVX-512 has the instruction for it). Other architectures have the
// portable level only.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace collcomm::detail {

enum class SimdLevel : uint8_t { kPortable, kAvx2, kAvx512 };

const char* simdLevelName(SimdLevel level);

// Levels this CPU and OS can run, narrowest (kPortable) first.
std::vector<SimdLevel> supportedSimdLevels();

namespace simd_internal {
inline constexpr uint8_t kUnchosen = 0xff;
extern std::atomic<uint8_t> gLevel;  // a SimdLevel, or kUnchosen before the first hostSimdLevel()
SimdLevel chooseOnce();
}  // namespace simd_internal

// The level in use: chosen on the first call from the CPU and COLLCOMM_HOST_SIMD (a level the CPU
// lacks falls back to the widest it has, with a warning).
inline SimdLevel hostSimdLevel() {
  const uint8_t v = simd_internal::gLevel.load(std::memory_order_relaxed);
  return v != simd_internal::kUnchosen ? static_cast<SimdLevel>(v) : simd_internal::chooseOnce();
}

// Switches the level for the whole process (tests and benchmarks that compare levels); returns
// false, changing nothing, when the CPU cannot run it.
bool setHostSimdLevel(SimdLevel level);

}  // namespace collcomm::detail
