// The launch environment (collcomm_launch.h): which launcher started this process, and how the ranks of
// one job agree on a ccUniqueId. Setup tier: runs once per communicator, before ccCommInitRank.
//
// Launcher variables, as the launchers set them (checked by running them on Debian 12):
//   ccrun           CCRUN_RANK, CCRUN_SIZE, CCRUN_LOCAL_RANK, CCRUN_UNIQUE_ID (hex)
//   Open MPI 4.1    OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; job: OMPI_MCA_ess_base_jobid (older:
//                   OMPI_MCA_orte_ess_jobid, 5.x: PMIX_NAMESPACE) plus the per-job random
//                   OMPI_MCA_orte_precondition_transports
//   MPICH 4 hydra   PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, PMI_FD (a socket to the host's
//                   hydra_pmi_proxy); no job id variable: the proxy's pid and start time name
//                   the job (SO_PEERCRED on PMI_FD; the parent process when that fails). That
//                   name is per host: a Hydra job across hosts needs PMI_JOBID or COLLCOMM_COMM_ID.
//   Slurm srun      SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID; job:
//                   SLURM_JOB_ID + SLURM_STEP_ID. A batch script also has SLURM_PROCID=0 and the
//                   allocation's SLURM_NTASKS but no step id, so a step id is required.
//
// Id file protocol (every launcher but ccrun): rank 0 writes one line
//   collcomm-id 1 <job key>/<job nonce>/<call number> <hex id>
// to a temporary file and renames it over the path, so a reader sees all of it or nothing. A
// reader accepts only the line of its own job and call, so a stale file (a killed earlier job, the
// previous communicator of this job) is never taken; rank 0 removes its files when it exits.
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collcomm_launch.h"

namespace {

constexpr const char* kPrefix = "collcomm launch";
constexpr int kDefaultTimeoutSeconds = 300;

struct LauncherVars {
  const char* name;
  const char* rank;
  const char* size;
  const char* sizeFallback;  // read when `size` is unset
  const char* localRank;
  const char* requiredA;  // one of these must be set too (nullptr: nothing required)
  const char* requiredB;
};

// Checked in this order; the first launcher whose rank variable is set is the one.
constexpr LauncherVars kLaunchers[] = {
    {"ccrun", "CCRUN_RANK", "CCRUN_SIZE", nullptr, "CCRUN_LOCAL_RANK", nullptr, nullptr},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", nullptr, "OMPI_COMM_WORLD_LOCAL_RANK", nullptr,
     nullptr},
    {"pmi", "PMI_RANK", "PMI_SIZE", nullptr, "MPI_LOCALRANKID", nullptr, nullptr},
    {"slurm", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_ID", "SLURM_STEPID"},
};

const char* env(const char* name) {
  const char* v = name != nullptr ? getenv(name) : nullptr;
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

// Strict decimal int: the whole text, no sign tricks beyond a leading '-'.
bool parseInt(const char* text, int* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < INT_MIN || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

// Keeps a job key usable as part of a file name.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out.substr(0, 100);
}

// "<pid>-<start time in clock ticks>": names a process uniquely for the life of the host.
std::string processKey(pid_t pid) {
  std::string key = std::to_string(pid);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = fopen(path, "re");
  if (f == nullptr) return key;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  // Field 22 (starttime) counts from the field after the ')' closing the command name (field 3).
  const char* p = strrchr(buf, ')');
  for (int field = 2; p != nullptr && field < 22; ++field) p = strchr(p + 1, ' ');
  if (p != nullptr) key += "-" + std::string(p + 1, strcspn(p + 1, " "));
  return key;
}

// Hydra's per-host proxy is the peer of PMI_FD (a socketpair); wrappers like `sh -c` in between
// keep the inherited descriptor, so this names the job even where getppid() would not.
std::string pmiProxyKey() {
  int fd = 0;
  if (parseInt(env("PMI_FD"), &fd) && fd >= 0) {
    struct ucred cred {};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0) return processKey(cred.pid);
  }
  return processKey(getppid());
}

struct JobName {
  std::string key;    // in the file name: short, readable
  std::string nonce;  // in the file only: tells apart jobs whose key repeats (pid reuse)
};

// Returns false when this launcher's job cannot be named (the caller says what to set).
bool jobName(const ccLaunchInfo* info, JobName* job) {
  const std::string launcher = info->launcher != nullptr ? info->launcher : "none";
  const char* slurmJob = env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : env("SLURM_JOBID");
  const char* slurmStep = env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : env("SLURM_STEPID");
  if (launcher == "openmpi") {
    const char* id = env("OMPI_MCA_ess_base_jobid");
    if (id == nullptr) id = env("OMPI_MCA_orte_ess_jobid");
    if (id == nullptr) id = env("PMIX_NAMESPACE");
    if (id == nullptr) return false;
    job->key = "openmpi-" + sanitize(id);
    if (const char* nonce = env("OMPI_MCA_orte_precondition_transports")) job->nonce = sanitize(nonce);
  } else if ((launcher == "slurm" || launcher == "pmi") && slurmJob != nullptr) {
    job->key = "slurm-" + sanitize(slurmJob) + "." + sanitize(slurmStep ? slurmStep : "0");
  } else if (launcher == "pmi") {
    if (const char* id = env("PMI_JOBID")) {
      job->key = "pmi-" + sanitize(id);
    } else {
      job->key = "pmi-" + pmiProxyKey();
    }
  } else {
    return false;
  }
  if (job->nonce.empty()) job->nonce = "-";
  return true;
}

std::string idFilePath(const JobName& job) {
  if (const char* path = env("COLLCOMM_ID_FILE")) return path;
  return "/tmp/collcomm-" + job.key + ".id";
}

// Files this process published (rank 0), removed at exit so /tmp does not collect them.
std::mutex g_publishedMu;
std::vector<std::string>* g_published = nullptr;

void removePublished() {
  std::lock_guard<std::mutex> lock(g_publishedMu);
  if (g_published == nullptr) return;
  for (const auto& p : *g_published) unlink(p.c_str());
}

void rememberPublished(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_publishedMu);
  if (g_published == nullptr) {
    g_published = new std::vector<std::string>();  // never freed: atexit handlers may still run
    atexit(removePublished);
  }
  for (const auto& p : *g_published)
    if (p == path) return;
  g_published->push_back(path);
}

// How many ids this process has shared so far: the n-th call on every rank pairs with the n-th.
std::mutex g_callMu;
int g_calls = 0;

ccResult_t publish(const std::string& path, const std::string& line) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    fprintf(stderr, "%s: rank 0 cannot create %s: %s\n", kPrefix, tmp.c_str(), strerror(errno));
    return ccSystemError;
  }
  ssize_t n = write(fd, line.data(), line.size());
  bool ok = n == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  int err = errno;
  ok = (close(fd) == 0) && ok;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) err = errno;
    unlink(tmp.c_str());
    fprintf(stderr, "%s: rank 0 cannot publish the job's id in %s: %s\n", kPrefix, path.c_str(), strerror(err));
    return ccSystemError;
  }
  rememberPublished(path);
  return ccSuccess;
}

// Reads the file; true when it holds the id for `token`.
bool readPublished(const std::string& path, const std::string& token, ccUniqueId* id) {
  FILE* f = fopen(path.c_str(), "re");
  if (f == nullptr) return false;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char magic[32], version[8], fileToken[512], hex[2 * CC_UNIQUE_ID_BYTES + 8];
  if (sscanf(buf, "%31s %7s %511s %263s", magic, version, fileToken, hex) != 4) return false;
  if (strcmp(magic, "collcomm-id") != 0 || strcmp(version, "1") != 0 || token != fileToken) return false;
  return ccLaunchDecodeId(hex, id) == 0;
}

ccResult_t shareThroughFile(const ccLaunchInfo* info, ccUniqueId* id, int timeoutSeconds) {
  JobName job;
  if (!jobName(info, &job)) {
    fprintf(stderr,
            "%s: rank %d: cannot tell this %s job from others to share its id; set COLLCOMM_COMM_ID=<host>:<port> "
            "on every rank, or start the job with ccrun\n",
            kPrefix, info->rank, info->launcher);
    return ccInvalidUsage;
  }
  int call;
  {
    std::lock_guard<std::mutex> lock(g_callMu);
    call = ++g_calls;
  }
  const std::string path = idFilePath(job);
  const std::string token = job.key + "/" + job.nonce + "/" + std::to_string(call);

  if (info->rank == 0) {
    ccUniqueId made;
    ccResult_t r = ccGetUniqueId(&made);
    if (r != ccSuccess) {
      fprintf(stderr, "%s: rank 0: ccGetUniqueId failed: %s: %s\n", kPrefix, ccGetErrorString(r),
              ccGetLastError(nullptr));
      return r;
    }
    char hex[2 * CC_UNIQUE_ID_BYTES + 1];
    ccLaunchEncodeId(&made, hex);
    r = publish(path, "collcomm-id 1 " + token + " " + hex + "\n");
    if (r != ccSuccess) return r;
    *id = made;
    return ccSuccess;
  }

  // Polls from 1 ms up to 50 ms apart: quick when rank 0 is quick, cheap when it is not.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    ccUniqueId got;
    if (readPublished(path, token, &got)) {
      *id = got;
      return ccSuccess;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  fprintf(stderr,
          "%s: rank %d waited %d s for rank 0 to publish the job's id in %s (job %s) and gave up; is rank 0 "
          "running? Ranks on several hosts need COLLCOMM_ID_FILE on a shared file system\n",
          kPrefix, info->rank, timeoutSeconds, path.c_str(), job.key.c_str());
  return ccTimeout;
}

}  // namespace

extern "C" ccResult_t ccLaunchDetect(ccLaunchInfo* info) {
  if (info == nullptr) return ccInvalidArgument;
  for (const LauncherVars& l : kLaunchers) {
    const char* rankText = env(l.rank);
    if (rankText == nullptr) continue;
    if (l.requiredA != nullptr && env(l.requiredA) == nullptr && env(l.requiredB) == nullptr) continue;
    const char* sizeName = (env(l.size) == nullptr && l.sizeFallback != nullptr) ? l.sizeFallback : l.size;
    const char* sizeText = env(sizeName);
    ccLaunchInfo out{1, 0, 0, -1, l.name};
    if (!parseInt(rankText, &out.rank) || !parseInt(sizeText, &out.size)) {
      fprintf(stderr, "%s: %s=%s and %s=%s are not a rank and a size\n", kPrefix, l.rank, rankText, sizeName,
              sizeText ? sizeText : "(unset)");
      return ccInvalidUsage;
    }
    if (out.size < 1 || out.rank < 0 || out.rank >= out.size) {
      fprintf(stderr, "%s: %s=%d is not a rank of a job of %s=%d\n", kPrefix, l.rank, out.rank, sizeName, out.size);
      return ccInvalidUsage;
    }
    if (const char* localText = env(l.localRank)) {
      if (!parseInt(localText, &out.localRank) || out.localRank < 0 || out.localRank >= out.size) {
        fprintf(stderr, "%s: %s=%s is not a local rank of a job of %d\n", kPrefix, l.localRank, localText, out.size);
        return ccInvalidUsage;
      }
    }
    *info = out;
    return ccSuccess;
  }
  *info = ccLaunchInfo{0, 0, 1, 0, "none"};
  return ccSuccess;
}

extern "C" ccResult_t ccLaunchShareId(const ccLaunchInfo* info, ccUniqueId* id, int timeoutSeconds) {
  if (info == nullptr || id == nullptr || info->launcher == nullptr) return ccInvalidArgument;
  if (timeoutSeconds <= 0) timeoutSeconds = kDefaultTimeoutSeconds;
  // One process, or a fixed rendezvous address every rank already knows: nothing to exchange.
  if (!info->launched || info->size == 1 || env("COLLCOMM_COMM_ID") != nullptr) return ccGetUniqueId(id);
  if (strcmp(info->launcher, "ccrun") == 0) {
    const char* hex = env("CCRUN_UNIQUE_ID");
    ccUniqueId got;
    if (hex == nullptr || ccLaunchDecodeId(hex, &got) != 0) {
      fprintf(stderr, "%s: rank %d: CCRUN_UNIQUE_ID is %s; start the program with ccrun, which sets it\n", kPrefix,
              info->rank, hex == nullptr ? "unset" : "not a hex id");
      return ccInvalidUsage;
    }
    *id = got;
    return ccSuccess;
  }
  return shareThroughFile(info, id, timeoutSeconds);
}

extern "C" int ccLaunchIdFilePath(const ccLaunchInfo* info, char* out, size_t outLen) {
  JobName job;
  if (info == nullptr || out == nullptr || !info->launched || strcmp(info->launcher, "ccrun") == 0 ||
      !jobName(info, &job))
    return -1;
  const std::string path = idFilePath(job);
  if (path.size() + 1 > outLen) return -1;
  memcpy(out, path.c_str(), path.size() + 1);
  return 0;
}

extern "C" void ccLaunchEncodeId(const ccUniqueId* id, char* out) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = reinterpret_cast<const unsigned char*>(id->internal);
  for (int i = 0; i < CC_UNIQUE_ID_BYTES; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  out[2 * CC_UNIQUE_ID_BYTES] = '\0';
}

extern "C" int ccLaunchDecodeId(const char* text, ccUniqueId* id) {
  if (text == nullptr || id == nullptr || strlen(text) != 2 * CC_UNIQUE_ID_BYTES) return -1;
  ccUniqueId out;
  for (int i = 0; i < CC_UNIQUE_ID_BYTES; ++i) {
    int v = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = text[2 * i + k];
      const int d = isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')               ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')               ? c - 'A' + 10
                                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    out.internal[i] = static_cast<char>(v);
  }
  *id = out;
  return 0;
}
