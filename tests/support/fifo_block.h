// One FIFO block, zeroed and aligned as a transport would map it, for tests that wire connections
// by hand (bindFifo) without a transport.
#pragma once

#include <cstdlib>
#include <cstring>

#include "device/fifo.h"

namespace collcomm::test {

struct FifoBlock {
  explicit FifoBlock(const detail::FifoLayout& layout)
      : mem(static_cast<char*>(std::aligned_alloc(detail::kFifoAlign, layout.totalBytes()))) {
    memset(mem, 0, layout.totalBytes());
  }
  ~FifoBlock() { std::free(mem); }
  FifoBlock(const FifoBlock&) = delete;
  FifoBlock& operator=(const FifoBlock&) = delete;
  char* mem;
};

}  // namespace collcomm::test
