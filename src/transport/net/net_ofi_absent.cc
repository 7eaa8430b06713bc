// The OFI backend where collcomm was built without libfabric's headers: it has no devices, and
// COLLCOMM_NET=ofi fails with a sentence saying so.
#include "common/status.h"
#include "transport/net/net.h"

namespace collcomm::detail {
namespace {

Status absentInit() {
  return CC_ERROR(Status::kSystemError,
                  "net/ofi: COLLCOMM_NET=ofi, but this collcomm was built without libfabric's headers "
                  "(install libfabric-dev and rebuild)");
}

Status absentDevices(int* count) {
  *count = 0;
  return kOk;
}

const NetOpsV1 kAbsent = {
    .name = "OFI",
    .version = kNetInterfaceVersion,
    .init = absentInit,
    .devices = absentDevices,
};

}  // namespace

const NetOpsV1& ofiNet() { return kAbsent; }

}  // namespace collcomm::detail
