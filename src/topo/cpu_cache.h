// The size of this host's last-level CPU cache, for tuning defaults that depend on what stays in
// cache (plan/tuner.cc). Setup tier: reads sysfs once per call.
#pragma once

#include <cstddef>
#include <string>

namespace collcomm::detail {

// Bytes of the highest-level data or unified cache CPU 0 reports in
// /sys/devices/system/cpu/cpu0/cache (a VM reports what its hypervisor shows); 0 when none can be
// read.
size_t lastLevelCacheBytes();

// A sysfs cache size ("32768K", "1M", "512"): bytes, or 0 when the text is not a size.
size_t parseCacheSize(const std::string& text);

}  // namespace collcomm::detail
