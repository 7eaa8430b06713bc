// The last-level cache size the planner's streaming threshold follows (topo/cpu_cache.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "topo/cpu_cache.h"

namespace collcomm::detail {
namespace {

TEST(CpuCache, ParsesSysfsSizes) {
  EXPECT_EQ(parseCacheSize("32768K"), size_t{32} << 20);
  EXPECT_EQ(parseCacheSize("1024K"), size_t{1} << 20);
  EXPECT_EQ(parseCacheSize("2M"), size_t{2} << 20);
  EXPECT_EQ(parseCacheSize("1G"), size_t{1} << 30);
  EXPECT_EQ(parseCacheSize("512"), size_t{512});
  // Anything else is not a size.
  EXPECT_EQ(parseCacheSize(""), 0u);
  EXPECT_EQ(parseCacheSize("K"), 0u);
  EXPECT_EQ(parseCacheSize("32768KB"), 0u);
  EXPECT_EQ(parseCacheSize("12X"), 0u);
  EXPECT_EQ(parseCacheSize("-4K"), 0u);
  EXPECT_EQ(parseCacheSize("99999999999999999999999K"), 0u);
}

TEST(CpuCache, ThisHostMatchesSysfs) {
  // Where sysfs lists caches, the answer is one of its data or unified sizes, at least as large
  // as the first level's; where it lists none, 0.
  const size_t llc = lastLevelCacheBytes();
  FILE* f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/size", "r");
  if (f == nullptr) {
    EXPECT_EQ(llc, 0u);
    return;
  }
  char buf[32] = {};
  ASSERT_NE(fgets(buf, sizeof buf, f), nullptr);
  fclose(f);
  std::string first(buf);
  while (!first.empty() && first.back() == '\n') first.pop_back();
  EXPECT_GE(llc, parseCacheSize(first));
  EXPECT_GT(llc, 0u);
}

}  // namespace
}  // namespace collcomm::detail
