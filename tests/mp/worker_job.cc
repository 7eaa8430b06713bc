// The driver side of the multi-process tests (see worker_job.h).
#include "mp/worker_job.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace collcomm::test {

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

bool exitedWith(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }

std::string hexOf(const ccUniqueId& id) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  for (char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

std::string readFile(const std::string& path) {
  std::string out;
  if (FILE* f = fopen(path.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    fclose(f);
  }
  return out;
}

std::vector<std::string> shmSegmentsOf(pid_t pid) {
  std::vector<std::string> found;
  const std::string prefix = "collcomm-" + std::to_string(pid) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) found.push_back(e->d_name);
    closedir(d);
  }
  return found;
}

void removeLibfabricShmOf(pid_t pid) {
  const std::string prefix = std::to_string(pid) + ":";
  std::vector<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.push_back(e->d_name);
    closedir(d);
  }
  for (const std::string& n : names) unlink(("/dev/shm/" + n).c_str());
}

void expectAllSucceeded(const WorkerJob& job, int nranks) {
  for (int r = 0; r < nranks; ++r) {
    const WorkerResult& w = job.result(r);
    EXPECT_TRUE(exitedWith(w.status, 0)) << "rank " << r << ": " << describeStatus(w.status) << "\n" << job.allOutput();
    if (!exitedWith(w.status, 0)) {
      EXPECT_TRUE(w.output.find("FAIL rank " + std::to_string(r)) != std::string::npos ||
                  w.output.find("WATCHDOG") != std::string::npos)
          << "rank " << r << " failed without saying why";
    }
  }
}

void expectNoShmLeft(const WorkerJob& job) {
  std::string names;
  for (const auto& n : job.leftoverSegments()) names += " /dev/shm/" + n;
  EXPECT_TRUE(names.empty()) << "shared memory segments left behind:" << names;
}

std::function<std::vector<std::string>(int)> perRankEnv(std::function<std::vector<std::string>(int)> own) {
  // Below Linux's ephemeral range (32768-60999 by default): no connect made meanwhile can hold the
  // port rank 0 is about to listen on.
  const std::string commId = "127.0.0.1:" + std::to_string(12000 + getpid() % 20000);
  return [own, commId](int rank) {
    std::vector<std::string> cmd = {"env", "COLLCOMM_SOCKET_IFNAME=lo", "COLLCOMM_COMM_ID=" + commId};
    for (auto& kv : own(rank)) cmd.push_back(kv);
    return cmd;
  };
}

}  // namespace collcomm::test
