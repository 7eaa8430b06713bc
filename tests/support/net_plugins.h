// The net plugin libraries the build makes for the tests (src/transport/net/plugins,
// tests/plugins), by key: "socket" and "ofi" (the in-tree backends as plugins of the public ABI),
// "nccl" and "nccl9" (our NCCL layout plugin as version 8 and as version 9). Full paths, so a test does not depend on
// the search; the loader's own tests (net_plugin_test.cc) check the search.
#pragma once

#include <string>

namespace collcomm::test {

inline std::string testNetPlugin(const std::string& key) {
  if (key == "nccl") return COLLCOMM_BINARY_DIR "/test-plugins/libcc-test-nccl-net.so";
  if (key == "nccl9") return COLLCOMM_BINARY_DIR "/test-plugins/libcc-test-nccl9-net.so";
  return COLLCOMM_BINARY_DIR "/libcollcomm-net-" + key + ".so";
}

}  // namespace collcomm::test
