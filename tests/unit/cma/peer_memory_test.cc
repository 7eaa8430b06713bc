// Peer-memory reads and writes (transport/cma/peer_memory.h): plain copies in-process,
// process_vm_readv/writev across processes, and the sentences a failed copy gives.
#include "transport/cma/peer_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "common/status.h"

namespace collcomm::detail {
namespace {

TEST(PeerMemory, SameProcessIsACopyEitherWay) {
  std::vector<int> src(1000), dst(1000, -1), back(1000, -1);
  std::iota(src.begin(), src.end(), 7);
  const PeerMemory self{3, getpid(), true, "here"};
  ASSERT_EQ(readPeer(self, src.data(), dst.data(), src.size() * sizeof(int), "Test", 0), kOk);
  EXPECT_EQ(src, dst);
  ASSERT_EQ(writePeer(self, src.data(), back.data(), src.size() * sizeof(int), "Test", 0), kOk);
  EXPECT_EQ(src, back);
}

TEST(PeerMemory, AnotherProcessIsReadWhereTheKernelAllows) {
  // A forked child holds the same addresses with its own copy of the data.
  std::vector<char> src(3 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 131 + 7);
  int ready[2], stop[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(stop), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(stop[0], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::vector<char> dst(src.size(), 0);
  const int err = tryReadProcess(child, src.data(), dst.data(), 8);
  if (err == 0) {
    const PeerMemory peer{1, child, false, "host-a"};
    EXPECT_EQ(readPeer(peer, src.data(), dst.data(), dst.size(), "Test", 0), kOk);
    EXPECT_EQ(src, dst);
    // An address the peer does not map: a sentence naming the peer, not a crash.
    EXPECT_EQ(readPeer(peer, reinterpret_cast<const void*>(uintptr_t{16}), dst.data(), 64, "AllGather", 2),
              Status::kRemoteError);
    const std::string msg = threadLastError();
    EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("host-a"), std::string::npos) << msg;
    EXPECT_NE(msg.find("AllGather on rank 2"), std::string::npos) << msg;
  }
  (void)!write(stop[1], &c, 1);
  int status = 0;
  waitpid(child, &status, 0);
  close(ready[0]);
  close(ready[1]);
  close(stop[0]);
  close(stop[1]);
  if (err != 0) GTEST_SKIP() << "process_vm_readv refused here: " << strerror(err);
  // The child has exited: its memory can no longer be read.
  const PeerMemory gone{1, child, false, "host-a"};
  EXPECT_EQ(readPeer(gone, src.data(), dst.data(), 64, "Broadcast", 0), Status::kRemoteError);
  EXPECT_NE(threadLastError().find("exited"), std::string::npos) << threadLastError();
}

TEST(PeerMemory, AnotherProcessIsWrittenWhereTheKernelAllows) {
  // The child checks, after the parent wrote into it, that its buffer holds the parent's pattern.
  std::vector<char> want(1 << 20), buf(want.size(), 0);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(i * 37 + 3);
  int ready[2], written[2], verdict[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(written), 0);
  ASSERT_EQ(pipe(verdict), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c = 1;
    (void)!write(ready[1], &c, 1);
    (void)!read(written[0], &c, 1);
    c = c == 1 ? static_cast<char>(buf == want) : 2;
    (void)!write(verdict[1], &c, 1);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const int err = tryReadProcess(child, buf.data(), buf.data(), 8);  // the same check as init's probe
  std::string msg;
  Status bad = kOk, good = kOk;
  if (err == 0) {
    const PeerMemory peer{1, child, false, "host-b"};
    good = writePeer(peer, want.data(), buf.data(), want.size(), "Test", 0);
    // An address the peer does not map: a sentence naming the peer and the direction.
    bad = writePeer(peer, want.data(), reinterpret_cast<void*>(uintptr_t{16}), 64, "Broadcast", 1);
    msg = threadLastError();
  }
  c = err == 0 ? 1 : 0;
  (void)!write(written[1], &c, 1);
  char childSaw = 0;
  ASSERT_EQ(read(verdict[0], &childSaw, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  for (int* p : {ready, written, verdict}) {
    close(p[0]);
    close(p[1]);
  }
  if (err != 0) GTEST_SKIP() << "process_vm_readv refused here: " << strerror(err);
  EXPECT_EQ(good, kOk);
  EXPECT_EQ(childSaw, 1) << "the child's buffer does not hold what was written";
  EXPECT_EQ(bad, Status::kRemoteError);
  EXPECT_NE(msg.find("Broadcast on rank 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("writing 64 bytes of rank 1's buffer (host host-b"), std::string::npos) << msg;
  EXPECT_NE(msg.find("process_vm_writev"), std::string::npos) << msg;
}

}  // namespace
}  // namespace collcomm::detail
