// How a process group's communicators are made (comm_setup.h).
#include "comm_setup.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace collcomm_torch {

ccUniqueId exchangeUniqueId(c10d::Store& store, const std::string& key, int rank) {
  ccUniqueId id;
  if (rank == 0) {
    ccResult_t res = ccGetUniqueId(&id);
    TORCH_CHECK(res == ccSuccess, "collcomm: ccGetUniqueId failed: ", ccGetLastError(nullptr));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store.set(key, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store.get(key);
    TORCH_CHECK(bytes.size() == sizeof(id), "collcomm: the unique id in the store has ", bytes.size(),
                " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  return id;
}

ccConfig_t commConfig(int device, const std::string& name, std::chrono::milliseconds timeout) {
  ccConfig_t config = CC_CONFIG_INITIALIZER;
  config.device = device;
  config.commName = name.c_str();
  config.timeout = static_cast<int>(std::max<int64_t>(1, (timeout.count() + 999) / 1000));
  return config;
}

}  // namespace collcomm_torch
