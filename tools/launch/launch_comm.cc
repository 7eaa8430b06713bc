// ccLaunchCommInit (collcomm_launch.h): detection, the id exchange and ccCommInitRankConfig as one
// call, so a launched program needs no code of its own to join its job. Setup tier.
#include <cstdio>

#include "collcomm_launch.h"

namespace {

// The id exchange waits as long as the communicator's own init may (config->timeout), else the
// launch library's default (ccLaunchShareId's 300 s).
int shareTimeout(const ccConfig_t* config) {
  if (config == nullptr || config->timeout == CC_CONFIG_UNDEF_INT || config->timeout <= 0) return 0;
  return config->timeout;
}

}  // namespace

extern "C" ccResult_t ccLaunchCommInit(ccComm_t* comm, ccConfig_t* config, ccLaunchInfo* info) {
  if (comm == nullptr) {
    fprintf(stderr, "collcomm launch: ccLaunchCommInit: comm is NULL\n");
    return ccInvalidArgument;
  }
  ccLaunchInfo found;
  ccResult_t r = ccLaunchDetect(&found);  // prints why when it fails
  if (r != ccSuccess) return r;
  ccUniqueId id;
  r = ccLaunchShareId(&found, &id, shareTimeout(config));  // prints why when it fails
  if (r != ccSuccess) return r;
  ccComm_t made = nullptr;
  r = ccCommInitRankConfig(&made, found.size, id, found.rank, config);
  if (r != ccSuccess) {
    fprintf(stderr, "collcomm launch: rank %d of %d (%s): ccCommInitRankConfig failed: %s: %s\n", found.rank,
            found.size, found.launcher, ccGetErrorString(r), ccGetLastError(nullptr));
    return r;
  }
  *comm = made;
  if (info != nullptr) *info = found;
  return ccSuccess;
}
