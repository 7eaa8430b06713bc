// How a process group's communicators are made: the unique id handed from rank 0 to the others
// through the group's store, and the settings every communicator of the group shares.
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "collcomm.h"

namespace collcomm_torch {

// Rank 0 makes a unique id and publishes it under `key`; the others read it (the store's own
// timeout bounds the wait).
ccUniqueId exchangeUniqueId(c10d::Store& store, const std::string& key, int rank);

// A communicator's settings for a group named `name` on `device` (CC_DEVICE_HOST or a CUDA
// ordinal): torch's timeout in whole seconds, rounded up, is collcomm's deadline for every wait.
// `name` must outlive the call the settings are used in.
ccConfig_t commConfig(int device, const std::string& name, std::chrono::milliseconds timeout);

}  // namespace collcomm_torch
