// ccCommSplit: a collective over the parent that makes one new communicator per color.
#pragma once

#include "common/status.h"
#include "core/comm.h"

namespace collcomm::detail {

// *out is null for CC_SPLIT_NOCOLOR.
Status commSplit(ccComm* parent, int color, int key, const CommConfig& config, ccComm** out);

}  // namespace collcomm::detail
