// Test helper: run a command with a given environment, capture its stdout and stderr, and wait for
// it under a deadline (killed with SIGKILL, process group and all, when the deadline passes).
// Also: the environment of this process without any launcher's variables, and this binary's path.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace collcomm::test {

struct CommandResult {
  int waitStatus = -1;  // as from waitpid
  bool timedOut = false;
  double seconds = 0;
  std::string out, err;

  bool exited() const { return WIFEXITED(waitStatus); }
  int exitCode() const { return WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1; }
};

// Variables of the launchers collcomm_launch.h understands (and the id file's), which a child must not
// inherit from whatever started the test.
inline bool isLauncherVariable(const char* entry) {
  static const char* kPrefixes[] = {
      "CCRUN_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID=", "SLURM_", "COLLCOMM_ID_FILE=", "COLLCOMM_COMM_ID="};
  for (const char* p : kPrefixes)
    if (strncmp(entry, p, strlen(p)) == 0) return true;
  return false;
}

// This process's environment minus launcher variables, plus `extra` ("NAME=value" entries).
inline std::vector<std::string> cleanEnvironment(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (!isLauncherVariable(*e)) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

inline std::string selfPath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

class Command {
 public:
  // Starts argv (argv[0] looked up in PATH) with env, in its own process group.
  Command(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    start_ = std::chrono::steady_clock::now();
    int outPipe[2], errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, outPipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errPipe[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    std::vector<std::string> argvCopy = argv, envCopy = env;
    std::vector<char*> a, e;
    for (auto& s : argvCopy) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : envCopy) e.push_back(s.data());
    e.push_back(nullptr);
    if (posix_spawnp(&pid_, a[0], &fa, &attr, a.data(), e.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(outPipe[1]);
    close(errPipe[1]);
    outFd_ = outPipe[0];
    errFd_ = errPipe[0];
  }
  ~Command() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (outFd_ >= 0) close(outFd_);
    if (errFd_ >= 0) close(errFd_);
  }
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  bool started() const { return pid_ > 0; }

  // Collects output until both pipes close and the process has exited, or until timeoutSeconds
  // have passed since the start (then kills it). Call once.
  CommandResult wait(double timeoutSeconds) {
    CommandResult r;
    const auto deadline = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(timeoutSeconds));
    while (pid_ > 0 || outFd_ >= 0 || errFd_ >= 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        r.timedOut = true;
        break;
      }
      pollfd fds[2] = {{outFd_, POLLIN, 0}, {errFd_, POLLIN, 0}};
      poll(fds, 2, 20);
      drain(&outFd_, fds[0].revents, &r.out);
      drain(&errFd_, fds[1].revents, &r.err);
      if (pid_ > 0 && waitpid(pid_, &r.waitStatus, WNOHANG) == pid_) pid_ = -1;
    }
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, &r.waitStatus, 0);
      pid_ = -1;
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return r;
  }

 private:
  static void drain(int* fd, short revents, std::string* into) {
    if (*fd < 0 || revents == 0) return;
    char buf[65536];
    ssize_t n = read(*fd, buf, sizeof(buf));
    if (n > 0) {
      into->append(buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      close(*fd);
      *fd = -1;
    }
  }

  pid_t pid_ = -1;
  int outFd_ = -1, errFd_ = -1;
  std::chrono::steady_clock::time_point start_;
};

inline CommandResult runCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                double timeoutSeconds) {
  Command c(argv, env);
  return c.wait(timeoutSeconds);
}

}  // namespace collcomm::test
