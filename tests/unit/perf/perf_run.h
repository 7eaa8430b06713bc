// Helpers for the perf-binary tests: run a program as a child with a deadline (it is killed, with
// its process group, when the deadline passes), and split nccl-tests-style output into header
// lines, column header, rows and footer.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace collcomm::test {

struct RunResult {
  int exitCode = -1;  // -1: killed (deadline) or did not start
  bool timedOut = false;
  std::string out;
  std::string err;
};

inline std::string perfBinary(const std::string& name) { return std::string(COLLCOMM_BINARY_DIR) + "/perf/" + name; }

inline bool isExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// Finds `name` on PATH (empty if absent).
inline std::string onPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (isExecutable(candidate)) return candidate;
  }
  return "";
}

// Runs argv[0] (a path, or a name looked up on PATH) with extra environment entries.
inline RunResult runProgram(const std::vector<std::string>& argv,
                            const std::vector<std::pair<std::string, std::string>>& env, int timeoutSec) {
  RunResult res;
  int outPipe[2], errPipe[2];
  if (pipe(outPipe) != 0 || pipe(errPipe) != 0) return res;
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(outPipe[1], 1);
    dup2(errPipe[1], 2);
    close(outPipe[0]);
    close(errPipe[0]);
    close(outPipe[1]);
    close(errPipe[1]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    fprintf(stderr, "cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(outPipe[1]);
  close(errPipe[1]);
  if (pid < 0) {
    close(outPipe[0]);
    close(errPipe[0]);
    return res;
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&res.out, &res.err};
  int open = 2;
  while (open > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      res.timedOut = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[8192];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (pollfd& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!res.timedOut && WIFEXITED(status)) res.exitCode = WEXITSTATUS(status);
  return res;
}

inline std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) lines.push_back(line);
  return lines;
}

inline std::vector<std::string> splitFields(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string w;
  while (ss >> w) f.push_back(w);
  return f;
}

inline std::string rtrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// nccl-tests output, split the way scripts read it: rows are the lines not starting with '#'.
struct Table {
  std::vector<std::string> comments;           // every '#' line, right-trimmed
  std::vector<std::vector<std::string>> rows;  // whitespace-split fields
  std::vector<std::string> rowLines;
  bool hasComment(const std::string& line) const {
    for (const std::string& c : comments)
      if (c == line) return true;
    return false;
  }
  // The comment lines that start with `prefix`.
  std::vector<std::string> commentsStarting(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& c : comments)
      if (c.compare(0, prefix.size(), prefix) == 0) out.push_back(c);
    return out;
  }
};

// `stripPrefix`: remove a launcher's "[0] " in front of each line.
inline Table parseTable(const std::string& out, bool stripPrefix = false) {
  Table t;
  for (std::string line : splitLines(out)) {
    if (stripPrefix && line.compare(0, 4, "[0] ") == 0) line = line.substr(4);
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.comments.push_back(rtrim(line));
    } else {
      t.rowLines.push_back(line);
      t.rows.push_back(splitFields(line));
    }
  }
  return t;
}

}  // namespace collcomm::test
