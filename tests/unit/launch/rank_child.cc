// One rank of a multi-process launch test (protocol in rank_child.h). Registered as a gtest global
// environment, so it runs inside main (after every static is initialised) and only when asked.
#include "rank_child.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collcomm.h"
#include "collcomm_launch.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

// CC_LAUNCH_TEST_INIT=launch: the one call, then the same all-reduce.
int playRankInOneCall() {
  ccLaunchInfo info;
  ccComm_t comm = nullptr;
  const ccResult_t r = ccLaunchCommInit(&comm, nullptr, &info);
  if (r != ccSuccess) return kChildShareFailed + r;
  int mine = info.rank + 1, sum = 0, count = 0;
  const bool reduced = ccAllReduce(&mine, &sum, 1, ccInt32, ccSum, comm, nullptr) == ccSuccess;
  printf("rank %d of %d via %s (launched %d)\nsum %d\n", info.rank, info.size, info.launcher, info.launched, sum);
  fflush(stdout);
  const bool ok =
      reduced && ccCommCount(comm, &count) == ccSuccess && count == info.size && sum == info.size * (info.size + 1) / 2;
  return (ccCommDestroy(comm) == ccSuccess && ok) ? 0 : 40;
}

int playRank() {
  Watchdog watchdog(60, "launch test child rank");
  const char* init = getenv("CC_LAUNCH_TEST_INIT");
  if (init != nullptr && strcmp(init, "launch") == 0) return playRankInOneCall();
  ccLaunchInfo info;
  if (ccLaunchDetect(&info) != ccSuccess) return 20;
  const char* timeoutText = getenv("CC_LAUNCH_TEST_TIMEOUT");
  ccUniqueId id;
  ccResult_t r = ccLaunchShareId(&info, &id, timeoutText != nullptr ? atoi(timeoutText) : 20);
  if (r != ccSuccess) return kChildShareFailed + r;
  char hex[2 * CC_UNIQUE_ID_BYTES + 1];
  ccLaunchEncodeId(&id, hex);
  printf("id %s\nrank %d of %d via %s\n", hex, info.rank, info.size, info.launcher);
  fflush(stdout);
  if (init != nullptr && init[0] == '0') return 0;

  ccComm_t comm = nullptr;
  if (ccCommInitRank(&comm, info.size, id, info.rank) != ccSuccess) {
    fprintf(stderr, "ccCommInitRank: %s\n", ccGetLastError(nullptr));
    return 40;
  }
  int mine = info.rank + 1, sum = 0;
  r = ccAllReduce(&mine, &sum, 1, ccInt32, ccSum, comm, nullptr);
  printf("sum %d\n", sum);
  fflush(stdout);
  const bool ok = r == ccSuccess && sum == info.size * (info.size + 1) / 2;
  return (ccCommDestroy(comm) == ccSuccess && ok) ? 0 : 40;
}

class RankChild : public ::testing::Environment {
 public:
  void SetUp() override {
    if (getenv("CC_LAUNCH_TEST_CHILD") == nullptr) return;
    const int status = playRank();
    fflush(stdout);
    exit(status);  // exit, not _exit: rank 0 removes its id file in an atexit handler
  }
};

[[maybe_unused]] ::testing::Environment* const g_rankChild = ::testing::AddGlobalTestEnvironment(new RankChild);

}  // namespace
}  // namespace collcomm::test
