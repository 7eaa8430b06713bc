// Handing descriptors to other processes (common/fd_share.h): a child process gets the offered
// file's descriptor and reads what the parent wrote; a wrong key, a withdrawn offer and a process
// that serves nothing are refused with a sentence naming the rank and pid, and no descriptor; a
// forked child keeps nothing its parent offered.
#include "common/fd_share.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "support/watchdog.h"

namespace collcomm::detail {
namespace {

constexpr char kText[] = "written before the offer";

// A memory file holding kText.
int memoryFile() {
  const int fd = memfd_create("fd_share_test", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (write(fd, kText, sizeof(kText)) != static_cast<ssize_t>(sizeof(kText))) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string contents(int fd) {
  char buf[sizeof(kText)] = {};
  if (pread(fd, buf, sizeof(buf), 0) != static_cast<ssize_t>(sizeof(buf))) return "(unreadable)";
  return std::string(buf, strnlen(buf, sizeof(buf)));
}

TEST(FdShare, AnotherProcessReadsTheOfferedFile) {
  test::Watchdog dog(60, "FdShare");
  const int file = memoryFile();
  ASSERT_GE(file, 0);
  FdTicket ticket;
  ASSERT_EQ(offerFd(file, &ticket), kOk) << threadLastError();
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  if (child == 0) {
    // The child fetches the file and sends back what it reads there, then writes through it.
    close(report[0]);
    int fd = -1;
    const Status s = fetchFd(ticket, 0, Deadline::afterSeconds(20), &fd);
    const std::string said = isOk(s) ? contents(fd) : "fetch failed: " + threadLastError();
    (void)!write(report[1], said.data(), said.size());
    if (fd >= 0) (void)!pwrite(fd, "W", 1, 0);
    _exit(isOk(s) ? 0 : 1);
  }
  close(report[1]);
  std::string said;
  char buf[256];
  for (ssize_t n; (n = read(report[0], buf, sizeof(buf))) > 0;) said.append(buf, static_cast<size_t>(n));
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << said;
  EXPECT_EQ(said, kText);
  // One file: the child's write is seen through the parent's descriptor.
  char first = 0;
  ASSERT_EQ(pread(file, &first, 1, 0), 1);
  EXPECT_EQ(first, 'W');
  withdrawFd(ticket.id);
  close(file);
}

TEST(FdShare, WrongKeyAndWithdrawnOffersGetNoDescriptor) {
  test::Watchdog dog(60, "FdShare");
  const int file = memoryFile();
  ASSERT_GE(file, 0);
  FdTicket ticket;
  ASSERT_EQ(offerFd(file, &ticket), kOk) << threadLastError();
  // The offer is its own copy: closing the caller's descriptor leaves it served.
  close(file);
  int fd = -1;
  FdTicket forged = ticket;
  forged.key[1] ^= 1;
  clearThreadLastError();
  EXPECT_EQ(fetchFd(forged, 3, Deadline::afterSeconds(10), &fd), Status::kRemoteError);
  EXPECT_EQ(fd, -1);
  EXPECT_NE(threadLastError().find("rank 3's process (pid " + std::to_string(getpid()) + ")"), std::string::npos)
      << threadLastError();
  EXPECT_NE(threadLastError().find("refused the key"), std::string::npos) << threadLastError();
  ASSERT_EQ(fetchFd(ticket, 3, Deadline::afterSeconds(10), &fd), kOk) << threadLastError();
  EXPECT_EQ(contents(fd), kText);
  close(fd);
  withdrawFd(ticket.id);
  fd = -1;
  clearThreadLastError();
  EXPECT_EQ(fetchFd(ticket, 3, Deadline::afterSeconds(10), &fd), Status::kRemoteError);
  EXPECT_EQ(fd, -1);
  EXPECT_NE(threadLastError().find("no longer offers"), std::string::npos) << threadLastError();
}

TEST(FdShare, ProcessThatServesNothingIsNamedAtOnce) {
  test::Watchdog dog(60, "FdShare");
  FdTicket ticket{};
  snprintf(ticket.socket, sizeof(ticket.socket), "collcomm-fd-test-%d-nobody", static_cast<int>(getpid()));
  ticket.pid = 4242;
  int fd = -1;
  clearThreadLastError();
  const Deadline deadline = Deadline::afterSeconds(30);
  EXPECT_EQ(fetchFd(ticket, 5, deadline, &fd), Status::kRemoteError);
  EXPECT_EQ(fd, -1);
  EXPECT_GT(deadline.remainingMs(), 20000) << "it waited for the deadline";
  EXPECT_NE(threadLastError().find("rank 5's process (pid 4242) does not serve"), std::string::npos)
      << threadLastError();
}

// A process that offers, forks a child and exits: the child must not keep the offer's socket (the
// name would stay bound with nobody serving, and a peer would wait out its deadline). So a fetch
// from the exited process is refused at once. Its fork, in turn, must serve afresh (offerFd in a
// forked process starts its own server).
TEST(FdShare, AForkedChildKeepsNoOfferOfItsParent) {
  test::Watchdog dog(60, "FdShare");
  int ticketPipe[2], holdPipe[2];
  ASSERT_EQ(pipe(ticketPipe), 0);
  ASSERT_EQ(pipe(holdPipe), 0);
  const pid_t offering = fork();
  if (offering == 0) {
    close(ticketPipe[0]);
    close(holdPipe[1]);
    const int file = memoryFile();
    FdTicket ticket{};
    int readyPipe[2];
    if (file < 0 || !isOk(offerFd(file, &ticket)) || pipe(readyPipe) != 0) _exit(1);
    if (fork() == 0) {
      // fork() returns here after the child's fork handlers ran: say so, then live on until the
      // test closes its end of holdPipe.
      close(ticketPipe[1]);
      close(readyPipe[0]);
      (void)!write(readyPipe[1], "r", 1);
      char c;
      (void)!read(holdPipe[0], &c, 1);
      _exit(0);
    }
    close(readyPipe[1]);
    char ready = 0;
    if (read(readyPipe[0], &ready, 1) != 1) _exit(1);
    (void)!write(ticketPipe[1], &ticket, sizeof(ticket));
    _exit(0);
  }
  close(ticketPipe[1]);
  close(holdPipe[0]);
  FdTicket ticket{};
  const ssize_t got = read(ticketPipe[0], &ticket, sizeof(ticket));
  close(ticketPipe[0]);
  int status = 0;
  ASSERT_EQ(waitpid(offering, &status, 0), offering);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the offering process failed";
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof(ticket)));
  int fd = -1;
  clearThreadLastError();
  const Deadline deadline = Deadline::afterSeconds(30);
  EXPECT_EQ(fetchFd(ticket, 2, deadline, &fd), Status::kRemoteError) << threadLastError();
  EXPECT_EQ(fd, -1);
  EXPECT_GT(deadline.remainingMs(), 20000) << "it waited for the deadline: the forked child kept the socket";
  EXPECT_NE(threadLastError().find("does not serve"), std::string::npos) << threadLastError();
  close(holdPipe[1]);  // the grandchild exits
}

}  // namespace
}  // namespace collcomm::detail
