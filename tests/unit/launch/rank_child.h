// The rank a multi-process launch test starts: this test binary again, with CC_LAUNCH_TEST_CHILD=1
// in its environment (plus a launcher's variables). A gtest global environment (rank_child.cc)
// then plays one rank instead of running tests:
//   ccLaunchDetect, ccLaunchShareId (CC_LAUNCH_TEST_TIMEOUT seconds, default 20), prints
//   "id <hex>"; unless CC_LAUNCH_TEST_INIT=0 also ccCommInitRank + an all-reduce of rank+1,
//   printing "sum <S>". CC_LAUNCH_TEST_INIT=launch: ccLaunchCommInit instead of all three, then the
//   same all-reduce, printing "rank <r> of <n> via <launcher> (launched <0|1>)" and "sum <S>".
// Exit status: 0 when all held; 20 detect failed; 30 + ccResult_t when sharing the id failed;
// 40 when init or the all-reduce failed or gave a wrong sum; 124 from its watchdog.
#pragma once

#include <string>
#include <vector>

#include "run_command.h"

namespace collcomm::test {

// A filter that selects one cheap test, so the global environment's SetUp runs (and exits).
constexpr const char* kChildFilter = "--gtest_filter=LaunchEnv.EncodeDecodeRoundTrip";
constexpr int kChildShareFailed = 30;

inline std::vector<std::string> childArgv() { return {selfPath(), kChildFilter}; }

}  // namespace collcomm::test
