// Whose pid a rank may look up in its own /proc (transport/transport.h samePidSpace): processes of
// one kernel and PID namespace, not a process in another container's namespace, whose pid names
// some other process here (or none), so that a dead-peer check would fail a live peer.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/peer_info.h"
#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

// The PeerInfo a child process reports (after `enter` ran in it), read through a pipe.
template <class Enter>
bool childInfo(Enter enter, PeerInfo* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    if (!enter()) _exit(2);
    const PeerInfo info = localPeerInfo(1, -1);
    _exit(write(fds[1], &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info)) ? 0 : 1);
  }
  close(fds[1]);
  const ssize_t got = read(fds[0], out, sizeof(*out));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return got == static_cast<ssize_t>(sizeof(*out)) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(PidSpace, ProcessesOfOneNamespaceSeeEachOthersPids) {
  test::Watchdog dog(30, "PidSpace");
  const PeerInfo me = localPeerInfo(0, -1);
  if (me.pidNamespace == 0) GTEST_SKIP() << "SKIPPED: /proc/self/ns/pid is unreadable here";
  PeerInfo child{};
  ASSERT_TRUE(childInfo([] { return true; }, &child));
  EXPECT_TRUE(samePidSpace(me, child));
  EXPECT_NE(child.pid, me.pid);
}

TEST(PidSpace, AProcessInAnotherPidNamespaceIsNotLookedUp) {
  test::Watchdog dog(30, "PidSpace");
  const PeerInfo me = localPeerInfo(0, -1);
  if (me.pidNamespace == 0) GTEST_SKIP() << "SKIPPED: /proc/self/ns/pid is unreadable here";
  // The child enters a new PID namespace and forks: its own child is the namespace's first process.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    if (unshare(CLONE_NEWPID) != 0) _exit(3);
    PeerInfo inner{};
    const bool ok = childInfo([] { return true; }, &inner);
    _exit(ok && write(fds[1], &inner, sizeof(inner)) == static_cast<ssize_t>(sizeof(inner)) ? 0 : 1);
  }
  close(fds[1]);
  PeerInfo inner{};
  const ssize_t got = read(fds[0], &inner, sizeof(inner));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    GTEST_SKIP() << "SKIPPED: this process may not make a PID namespace (unshare(CLONE_NEWPID) needs CAP_SYS_ADMIN)";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == static_cast<ssize_t>(sizeof(inner)));
  EXPECT_EQ(inner.pid, 1) << "the namespace's first process";
  EXPECT_EQ(inner.machineHash, me.machineHash) << "one kernel";
  EXPECT_NE(inner.pidNamespace, me.pidNamespace);
  EXPECT_FALSE(samePidSpace(me, inner)) << "pid 1 here is not that process";
}

}  // namespace
}  // namespace collcomm::detail
