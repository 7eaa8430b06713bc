// ccMemAlloc/ccMemFree and ccCommRegister/ccCommDeregister on host communicators: memory that
// collectives take, registrations that live until deregistered or the communicator ends, and a
// sentence for every misuse. (A machine with a GPU gives device memory: tests/unit/gpu.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/thread_ranks.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

bool contains(const char* text, const char* part) { return text != nullptr && strstr(text, part) != nullptr; }

// Where an NVIDIA GPU may be usable, ccMemAlloc of a CUDA build gives device memory, which host
// communicators do not take: those tests are tests/unit/gpu's there.
#define SKIP_WHERE_A_GPU_MAY_BE_USABLE()                                                                  \
  do {                                                                                                    \
    if (access("/dev/nvidiactl", F_OK) == 0)                                                              \
      GTEST_SKIP() << "SKIPPED: an NVIDIA GPU is here, so ccMemAlloc may give device memory "             \
                      "(GpuComm.MemAllocAndRegisteredBuffers covers it)";                                 \
  } while (0)

TEST(MemAlloc, HostMemoryWhereThereIsNoGpuIsPageAlignedAndFreedOnce) {
  SKIP_WHERE_A_GPU_MAY_BE_USABLE();
  void* p = nullptr;
  ASSERT_EQ(ccMemAlloc(&p, 10000), ccSuccess) << ccGetLastError(nullptr);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  memset(p, 0x5a, 10000);  // all of it is writable
  EXPECT_EQ(ccMemFree(p), ccSuccess);
  EXPECT_EQ(ccMemFree(p), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "not a live block of ccMemAlloc")) << ccGetLastError(nullptr);
  int local = 0;
  EXPECT_EQ(ccMemFree(&local), ccInvalidArgument);
  EXPECT_EQ(ccMemFree(nullptr), ccSuccess);
}

TEST(MemAlloc, EdgeSizesAndArguments) {
  void* p = &p;
  EXPECT_EQ(ccMemAlloc(&p, 0), ccSuccess);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(ccMemAlloc(nullptr, 64), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(nullptr), "ptr is NULL")) << ccGetLastError(nullptr);
  EXPECT_EQ(ccMemAlloc(&p, SIZE_MAX), ccInvalidArgument);
  EXPECT_EQ(p, nullptr);
}

// Buffers from ccMemAlloc, registered on every rank, carry an AllReduce exactly; deregistering
// ends each registration once.
TEST(CommRegister, RegisteredMemAllocBuffersCarryCollectives) {
  SKIP_WHERE_A_GPU_MAY_BE_USABLE();
  Watchdog dog(60, "registered buffers");
  ThreadRanks ranks(3);
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  constexpr size_t kCount = 1000;
  ranks.run([&](int rank, ccComm_t comm) {
    void* send = nullptr;
    void* recv = nullptr;
    if (ccMemAlloc(&send, kCount * sizeof(float)) != ccSuccess || ccMemAlloc(&recv, kCount * sizeof(float)) != ccSuccess)
      return ranks.fail(std::string("ccMemAlloc: ") + ccGetLastError(nullptr));
    void* sendHandle = nullptr;
    void* recvHandle = nullptr;
    if (ccCommRegister(comm, send, kCount * sizeof(float), &sendHandle) != ccSuccess ||
        ccCommRegister(comm, recv, kCount * sizeof(float), &recvHandle) != ccSuccess || sendHandle == nullptr ||
        recvHandle == nullptr || sendHandle == recvHandle)
      return ranks.fail(std::string("ccCommRegister: ") + ccGetLastError(comm));
    float* in = static_cast<float*>(send);
    for (size_t i = 0; i < kCount; ++i) in[i] = static_cast<float>((rank + 1) * (i % 7));
    if (ccAllReduce(send, recv, kCount, ccFloat32, ccSum, comm, nullptr) != ccSuccess)
      return ranks.fail(std::string("allreduce: ") + ccGetLastError(comm));
    const float* out = static_cast<const float*>(recv);
    for (size_t i = 0; i < kCount; ++i)
      if (out[i] != static_cast<float>(6 * (i % 7))) return ranks.fail("allreduce on registered buffers is wrong");
    if (ccCommDeregister(comm, sendHandle) != ccSuccess || ccCommDeregister(comm, recvHandle) != ccSuccess)
      return ranks.fail(std::string("ccCommDeregister: ") + ccGetLastError(comm));
    if (ccCommDeregister(comm, sendHandle) != ccInvalidArgument ||
        !contains(ccGetLastError(comm), "not a live registration"))
      return ranks.fail("a second ccCommDeregister of one handle was not refused");
    if (ccMemFree(send) != ccSuccess || ccMemFree(recv) != ccSuccess) return ranks.fail("ccMemFree failed");
  });
  EXPECT_TRUE(ranks.ok()) << ranks.failures();
}

TEST(CommRegister, MisuseIsRefusedWithASentenceAndRegistrationsEndWithTheCommunicator) {
  Watchdog dog(60, "register misuse");
  ThreadRanks ranks(2);
  ASSERT_EQ(ranks.initResult(), ccSuccess) << ccGetLastError(nullptr);
  ccComm_t c0 = ranks.comm(0), c1 = ranks.comm(1);
  std::vector<char> buf(4096);
  void* handle = &handle;
  EXPECT_EQ(ccCommRegister(c0, nullptr, 64, &handle), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c0), "buff is NULL")) << ccGetLastError(c0);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(ccCommRegister(c0, buf.data(), 0, &handle), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c0), "size is 0")) << ccGetLastError(c0);
  EXPECT_EQ(ccCommRegister(c0, buf.data(), buf.size(), nullptr), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c0), "handle is NULL")) << ccGetLastError(c0);
  EXPECT_EQ(ccCommRegister(nullptr, buf.data(), buf.size(), &handle), ccInvalidArgument);
  // A handle belongs to the communicator that made it.
  ASSERT_EQ(ccCommRegister(c0, buf.data(), buf.size(), &handle), ccSuccess) << ccGetLastError(c0);
  EXPECT_EQ(ccCommDeregister(c1, handle), ccInvalidArgument);
  EXPECT_TRUE(contains(ccGetLastError(c1), "rank 1")) << ccGetLastError(c1);
  EXPECT_EQ(ccCommDeregister(c0, nullptr), ccInvalidArgument);
  // One buffer may be registered twice; each registration is its own.
  void* again = nullptr;
  ASSERT_EQ(ccCommRegister(c0, buf.data(), buf.size(), &again), ccSuccess);
  EXPECT_NE(again, handle);
  EXPECT_EQ(ccCommDeregister(c0, again), ccSuccess);
  // `handle` stays registered: ccCommDestroy (ThreadRanks' destructor) ends it; LeakSanitizer
  // would see it otherwise.
}

}  // namespace
}  // namespace collcomm::test
