#include "topo/cpu_cache.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "topo/detect.h"

namespace collcomm::detail {

size_t parseCacheSize(const std::string& text) {
  size_t i = 0, value = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (value > (SIZE_MAX >> 4) / 10) return 0;  // no cache is that large: not a size
    value = value * 10 + static_cast<size_t>(text[i] - '0');
  }
  if (i == 0) return 0;
  size_t shift = 0;
  if (i < text.size()) {
    switch (text[i++]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: return 0;
    }
  }
  return i == text.size() ? value << shift : 0;
}

size_t lastLevelCacheBytes() {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
  int bestLevel = 0;
  size_t bestBytes = 0;
  for (int index = 0; index < 16; ++index) {
    std::string level, type, size;
    const std::string base = dir + std::to_string(index) + "/";
    if (!detect::readSysfs(base + "level", &level)) break;
    if (!detect::readSysfs(base + "type", &type) || type == "Instruction" || !detect::readSysfs(base + "size", &size))
      continue;
    const int lv = std::atoi(level.c_str());
    const size_t bytes = parseCacheSize(size);
    if (bytes != 0 && lv > bestLevel) {
      bestLevel = lv;
      bestBytes = bytes;
    }
  }
  return bestBytes;
}

}  // namespace collcomm::detail
