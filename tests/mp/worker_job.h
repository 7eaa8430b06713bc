// The driver side of the multi-process tests: a job of cc_mp_worker processes (one per rank)
// spawned with the job's unique id (the rendezvous service runs as a thread of the driver), every
// exit status checked within a deadline, all of them killed when it passes; and the checks the
// tests share (exit statuses, /dev/shm leftovers).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "collcomm.h"

extern char** environ;

namespace collcomm::test {

// The deadline most jobs run under, in seconds.
constexpr int kDeadlineSeconds = 150;

// One finished worker: how it ended and everything it printed.
struct WorkerResult {
  pid_t pid = -1;
  int status = 0;  // from waitpid
  std::string output;
};

// "exit status N" or "killed by signal NAME", for failure messages.
std::string describeStatus(int status);
bool exitedWith(int status, int code);
// The unique id as the workers' --id takes it: 256 hex digits.
std::string hexOf(const ccUniqueId& id);
std::string readFile(const std::string& path);
// /dev/shm/collcomm-<pid>-* names: SHM segments made by process `pid` (see shm_transport.cc).
std::vector<std::string> shmSegmentsOf(pid_t pid);
// Removes the shared memory libfabric's shm provider made for process `pid`, which was killed
// before it could (its regions are /dev/shm/<pid>:<n>:<n>, 16 MiB each: left there, every run of
// a dying-rank test over shm would keep some). Survivors remove their own when they close.
void removeLibfabricShmOf(pid_t pid);

// A job of nranks worker processes running one scenario.
class WorkerJob {
 public:
  // env: extra NAME=VALUE settings for the workers (override the driver's environment). Each
  // worker's own watchdog fires a little before the driver's deadline, so a hung rank says so
  // itself; workerWatchdogSeconds > 0 overrides that.
  WorkerJob(std::string scenario, int nranks, std::vector<std::string> env, int deadlineSeconds,
            int workerWatchdogSeconds = 0)
      : scenario_(std::move(scenario)),
        nranks_(nranks),
        env_(std::move(env)),
        deadlineSeconds_(deadlineSeconds),
        workerWatchdogSeconds_(workerWatchdogSeconds > 0 ? workerWatchdogSeconds
                               : deadlineSeconds > 10    ? deadlineSeconds - 5
                                                         : deadlineSeconds) {}

  ~WorkerJob() {
    killAll();  // only if a test bailed out early; normally everyone is reaped already
    for (const auto& p : logs_) unlink(p.c_str());
  }

  // Runs each worker under a command prefix (e.g. {"ip", "netns", "exec", NAME, "env", ...}), found
  // on PATH; the workers then make the unique id themselves from COLLCOMM_COMM_ID (--id=commid).
  void setLauncher(std::function<std::vector<std::string>(int rank)> prefix) { launcher_ = std::move(prefix); }
  // Called every few milliseconds while the workers run, with the seconds since they were spawned.
  void setTick(std::function<void(double)> tick) { tick_ = std::move(tick); }

  // Spawns the workers and waits for all of them. Returns "" or why the job could not be run
  // (spawn failure, deadline passed: then every worker was killed).
  std::string run() {
    // The rendezvous service starts here, on a thread of this process, and ends once every rank
    // has joined (or after the driver's COLLCOMM_TIMEOUT, when some never do).
    ccUniqueId id{};
    if (!launcher_) {
      ccResult_t r = ccGetUniqueId(&id);
      if (r != ccSuccess) return std::string("ccGetUniqueId failed: ") + ccGetLastError(nullptr);
    }

    std::vector<std::string> envStrings;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      bool overridden = name == "CC_MP_UNIQUE_ID";
      for (const auto& mine : env_) overridden |= mine.compare(0, name.size() + 1, name + "=") == 0;
      if (!overridden) envStrings.push_back(kv);
    }
    for (const auto& kv : env_) envStrings.push_back(kv);
    std::vector<char*> envp;
    for (auto& s : envStrings) envp.push_back(s.data());
    envp.push_back(nullptr);

    results_.assign(nranks_, WorkerResult{});
    for (int rank = 0; rank < nranks_; ++rank) {
      char logPath[] = "/tmp/cc_mp_worker_XXXXXX";
      int fd = mkstemp(logPath);
      if (fd < 0) return std::string("mkstemp failed: ") + strerror(errno);
      logs_.push_back(logPath);
      // CC_MP_WORKER: another build's worker, for A/B measurements from one driver.
      const char* worker = getenv("CC_MP_WORKER");
      std::vector<std::string> args = {worker != nullptr && worker[0] != '\0' ? worker : CC_MP_WORKER_PATH,
                                       "--scenario=" + scenario_,
                                       "--nranks=" + std::to_string(nranks_),
                                       "--rank=" + std::to_string(rank),
                                       "--id=" + (launcher_ ? std::string("commid") : hexOf(id)),
                                       "--watchdog=" + std::to_string(workerWatchdogSeconds_)};
      if (launcher_) {
        std::vector<std::string> full = launcher_(rank);
        full.insert(full.end(), args.begin(), args.end());
        args = std::move(full);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
      posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
      posix_spawn_file_actions_addclose(&actions, fd);
      pid_t pid = -1;
      const int err = posix_spawnp(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
      posix_spawn_file_actions_destroy(&actions);
      close(fd);
      if (err != 0) return "posix_spawn(" + args[0] + ") failed: " + strerror(err);
      results_[rank].pid = pid;
      running_.push_back(rank);
    }

    const auto started = std::chrono::steady_clock::now();
    const auto deadline = started + std::chrono::seconds(deadlineSeconds_);
    while (!running_.empty()) {
      if (tick_) tick_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      for (size_t i = 0; i < running_.size();) {
        WorkerResult& w = results_[running_[i]];
        if (waitpid(w.pid, &w.status, WNOHANG) == w.pid) {
          running_.erase(running_.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
      if (running_.empty()) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        std::string ranks;
        for (int rank : running_) ranks += " " + std::to_string(rank);
        killAll();
        collectOutput();
        return "WATCHDOG: the " + scenario_ + " job did not finish within " + std::to_string(deadlineSeconds_) +
               " s; killed ranks" + ranks + "\n" + allOutput();
      }
      // Only the interval between looks at the workers' exit: the loop ends on their exits or the deadline.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    collectOutput();
    // A line or two per rank on success: what ran and how long it took.
    printf("%s", allOutput().c_str());
    return "";
  }

  const WorkerResult& result(int rank) const { return results_[rank]; }

  // Every worker's output, each line prefixed by its rank, for failure messages.
  std::string allOutput() const {
    std::string s;
    for (int r = 0; r < nranks_; ++r)
      s += "---- rank " + std::to_string(r) + " (pid " + std::to_string(results_[r].pid) + ", " +
           describeStatus(results_[r].status) + ") ----\n" + results_[r].output;
    return s;
  }

  // Names of /dev/shm segments any worker of this job left behind.
  std::vector<std::string> leftoverSegments() const {
    std::vector<std::string> all;
    for (const auto& w : results_)
      for (auto& name : shmSegmentsOf(w.pid)) all.push_back(name);
    return all;
  }

 private:
  void killAll() {
    for (int rank : running_) kill(results_[rank].pid, SIGKILL);
    for (int rank : running_) waitpid(results_[rank].pid, &results_[rank].status, 0);
    running_.clear();
  }
  void collectOutput() {
    for (int r = 0; r < static_cast<int>(logs_.size()); ++r) results_[r].output = readFile(logs_[r]);
  }

  std::string scenario_;
  int nranks_;
  std::vector<std::string> env_;
  int deadlineSeconds_;
  int workerWatchdogSeconds_;
  std::vector<WorkerResult> results_;
  std::vector<int> running_;  // ranks not reaped yet
  std::vector<std::string> logs_;
  std::function<std::vector<std::string>(int)> launcher_;
  std::function<void(double)> tick_;
};

// Every worker exited 0; otherwise each failed one printed a FAIL line.
void expectAllSucceeded(const WorkerJob& job, int nranks);
// No SHM segment of the job's workers is left.
void expectNoShmLeft(const WorkerJob& job);

// Ranks launched with settings of their own (COLLCOMM_COMM_ID on loopback, so each worker makes
// the id itself and rank 0 starts the root): `own(rank)` gives a rank's extra NAME=VALUE pairs.
std::function<std::vector<std::string>(int)> perRankEnv(std::function<std::vector<std::string>(int)> own);

}  // namespace collcomm::test
