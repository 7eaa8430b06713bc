// ccrun: starts the N ranks of a collcomm job as processes on this host, like torchrun.
//
//   ccrun -n N [--bind core|none] [--timeout S] [--grace S] [--] PROGRAM ARGS...
//
// ccrun makes the job's ccUniqueId itself (the rendezvous service lives in ccrun for the job) and
// gives every rank CCRUN_RANK, CCRUN_SIZE, CCRUN_LOCAL_RANK, CCRUN_LOCAL_SIZE and CCRUN_UNIQUE_ID
// (hex), which collcomm_launch.h reads. Each rank's stdout/stderr comes out on ccrun's, one whole line
// at a time, prefixed "[rank] ". The first rank that fails (non-zero exit or a signal) ends the
// job: the others get SIGTERM, then SIGKILL after the grace period, ccrun names the rank and how
// it failed, and exits with its status (128+signal for a signal). --timeout ends the job the same
// way with status 124. ccrun never waits without a deadline once the job is ending.
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collcomm.h"
#include "collcomm_launch.h"
#include "line_forwarder.h"
#include "version_text.h"

extern char** environ;

namespace collcomm::ccrun {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxRanks = 4096;
constexpr int kStatusTimeout = 124;
constexpr int kStatusUsage = 2;
// After the last rank exits, output still buffered in pipes (or held open by a rank's own
// children) is forwarded for at most this long.
constexpr auto kDrainLimit = std::chrono::seconds(2);

const char kUsage[] =
    "usage: ccrun -n N [--bind core|none] [--timeout S] [--grace S] [--] PROGRAM [ARGS...]\n"
    "       ccrun --version\n"
    "\n"
    "Starts N processes of PROGRAM as the ranks of one collcomm job on this host.\n"
    "\n"
    "  -n, --nranks N    number of ranks (1..4096)\n"
    "  --bind core|none  core: pin rank r to the r-th allowed core; with more ranks than cores,\n"
    "                    cores are shared round robin (ccrun says so); none (default)\n"
    "  --timeout S       end the job after S seconds (exit status 124); default: no limit\n"
    "  --grace S         seconds between SIGTERM and SIGKILL when ending the job (default 3)\n"
    "  -h, --help        this text\n"
    "  --version         the collcomm version ccrun runs with\n"
    "\n"
    "Each rank gets CCRUN_RANK, CCRUN_SIZE, CCRUN_LOCAL_RANK, CCRUN_LOCAL_SIZE and CCRUN_UNIQUE_ID\n"
    "(the job's ccUniqueId in hex, made by ccrun, whose rendezvous service serves the job); programs\n"
    "read them with ccLaunchCommInit (collcomm_launch.h, libcollcomm_launch). Ranks' stdin is\n"
    "/dev/null; their stdout and stderr come out on ccrun's, each line prefixed \"[rank] \".\n"
    "\n"
    "Exit status: 0 when every rank exits 0; else the first failing rank's exit status, or 128+N\n"
    "when it was killed by signal N (the other ranks are then ended: SIGTERM, SIGKILL after the\n"
    "grace period); 124 on --timeout; 2 for a usage error; 126/127 when PROGRAM cannot be started.\n";

struct Options {
  int nranks = 0;
  bool bindCore = false;
  double timeoutSeconds = 0;  // 0: none
  double graceSeconds = 3;
  std::vector<char*> program;  // PROGRAM ARGS..., then a nullptr
};

// ccrun's own messages: one write per message, so they do not split forwarded lines.
void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
  char buf[1024];
  int n = snprintf(buf, sizeof(buf), "ccrun: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  va_end(ap);
  if (n > static_cast<int>(sizeof(buf)) - 2) n = sizeof(buf) - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, buf, n);
  (void)ignored;
}

bool parseSeconds(const char* text, double* out) {
  char* end = nullptr;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0) || v > 1e7) return false;
  *out = v;
  return true;
}

// Returns -1 to go on, else the exit status (0 for -h).
int parseOptions(int argc, char** argv, Options* o) {
  static const option kLong[] = {{"nranks", required_argument, nullptr, 'n'},
                                 {"bind", required_argument, nullptr, 'b'},
                                 {"timeout", required_argument, nullptr, 't'},
                                 {"grace", required_argument, nullptr, 'g'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"version", no_argument, nullptr, 'V'},
                                 {nullptr, 0, nullptr, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+n:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'n': {
        char* end = nullptr;
        long v = strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || v < 1 || v > kMaxRanks) {
          say("-n wants a number of ranks from 1 to %d, not '%s'", kMaxRanks, optarg);
          return kStatusUsage;
        }
        o->nranks = static_cast<int>(v);
        break;
      }
      case 'b':
        if (strcmp(optarg, "core") != 0 && strcmp(optarg, "none") != 0) {
          say("--bind wants core or none, not '%s'", optarg);
          return kStatusUsage;
        }
        o->bindCore = strcmp(optarg, "core") == 0;
        break;
      case 't':
      case 'g':
        if (!parseSeconds(optarg, c == 't' ? &o->timeoutSeconds : &o->graceSeconds)) {
          say("%s wants a positive number of seconds, not '%s'", c == 't' ? "--timeout" : "--grace", optarg);
          return kStatusUsage;
        }
        break;
      case 'h':
        fputs(kUsage, stdout);
        return 0;
      case 'V':
        return ccPrintToolVersion("ccrun");
      default:
        say("unknown or incomplete option '%s' (ccrun -h shows the usage)", argv[optind - 1]);
        return kStatusUsage;
    }
  }
  if (o->nranks == 0 || optind >= argc) {
    say("%s (ccrun -h shows the usage)", o->nranks == 0 ? "-n N is required" : "no PROGRAM to run");
    return kStatusUsage;
  }
  for (int i = optind; i < argc; ++i) o->program.push_back(argv[i]);
  o->program.push_back(nullptr);
  return -1;
}

// ---- signals: handlers only write the signal number into a pipe the poll loop watches.
int g_signalPipe[2] = {-1, -1};

void onSignal(int signo) {
  const int saved = errno;
  const char b = static_cast<char>(signo);
  ssize_t ignored = write(g_signalPipe[1], &b, 1);
  (void)ignored;
  errno = saved;
}

bool installSignals() {
  if (pipe2(g_signalPipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP})
    if (sigaction(s, &sa, nullptr) != 0) return false;
  signal(SIGPIPE, SIG_IGN);  // a closed ccrun stdout must not kill the job's supervisor
  return true;
}

std::string signalName(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

// ---- ranks
struct Rank {
  pid_t pid = -1;
  bool alive = false;
  int waitStatus = 0;
  std::unique_ptr<LineForwarder> out, err;
};

// The environment of rank r: ccrun's, with the CCRUN_* variables replaced.
std::vector<std::string> rankEnvironment(int rank, int nranks, const std::string& idHex) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (strncmp(*e, "CCRUN_", 6) != 0) env.emplace_back(*e);
  env.push_back("CCRUN_RANK=" + std::to_string(rank));
  env.push_back("CCRUN_SIZE=" + std::to_string(nranks));
  env.push_back("CCRUN_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("CCRUN_LOCAL_SIZE=" + std::to_string(nranks));
  env.push_back("CCRUN_UNIQUE_ID=" + idHex);
  return env;
}

// Starts one rank in its own process group (so ending it ends what it started too). With core >= 0
// the rank starts pinned to that core: posix_spawn cannot set affinity, but a child inherits its
// parent thread's, so this thread is pinned around the spawn. Returns 0 or an errno value.
int spawnRank(const Options& o, int rank, const std::string& idHex, int core, Rank* r) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0) return errno;
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    const int e = errno;
    close(outPipe[0]);
    close(outPipe[1]);
    return e;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, outPipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, errPipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = rankEnvironment(rank, o.nranks, idHex);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  cpu_set_t saved;
  const bool pin = core >= 0 && sched_getaffinity(0, sizeof(saved), &saved) == 0;
  if (pin) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(core, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, o.program[0], &fa, &attr, o.program.data(), envp.data());
  if (pin) sched_setaffinity(0, sizeof(saved), &saved);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(outPipe[1]);
  close(errPipe[1]);
  if (rc != 0) {
    close(outPipe[0]);
    close(errPipe[0]);
    return rc;
  }
  fcntl(outPipe[0], F_SETFL, O_NONBLOCK);
  fcntl(errPipe[0], F_SETFL, O_NONBLOCK);
  r->pid = pid;
  r->alive = true;
  r->out = std::make_unique<LineForwarder>(outPipe[0], STDOUT_FILENO, rank);
  r->err = std::make_unique<LineForwarder>(errPipe[0], STDERR_FILENO, rank);
  return 0;
}

std::vector<int> allowedCores() {
  std::vector<int> cores;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

// ---- the job: spawn, supervise, end.
class Job {
 public:
  explicit Job(const Options& o) : o_(o), ranks_(o.nranks) {}

  int run(const std::string& idHex) {
    const std::vector<int> cores = o_.bindCore ? allowedCores() : std::vector<int>{};
    // Two ranks on one core take turns: each waits a scheduler slice for the other, which slows
    // every collective by orders of magnitude. Binding still happens, as asked, round robin.
    if (cores.size() > 0 && static_cast<size_t>(o_.nranks) > cores.size())
      say("warning: --bind core with %d ranks but %zu allowed cores: binding round robin, so ranks share cores "
          "(rank r on allowed core r mod %zu) and run far slower; use --bind none or at most %zu ranks",
          o_.nranks, cores.size(), cores.size(), cores.size());
    for (int r = 0; r < o_.nranks; ++r) {
      const int core = cores.empty() ? -1 : cores[r % cores.size()];
      const int err = spawnRank(o_, r, idHex, core, &ranks_[r]);
      if (err != 0) {
        say("cannot start rank %d (%s): %s", r, o_.program[0], strerror(err));
        endJob(err == ENOENT ? 127 : 126);
        break;
      }
      if (core >= 0) say("rank %d bound to core %d", r, core);
    }
    if (o_.timeoutSeconds > 0)
      jobDeadline_ =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.timeoutSeconds));
    supervise();
    return status_;
  }

 private:
  // Starts ending the job with this exit status (the first reason wins): SIGTERM to every live
  // rank's process group now, SIGKILL when the grace period is over.
  void endJob(int status) {
    if (ending_) return;
    ending_ = true;
    status_ = status;
    killAll(SIGTERM);
    killDeadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.graceSeconds));
  }

  void killAll(int signo) {
    for (Rank& r : ranks_)
      if (r.alive && kill(-r.pid, signo) != 0) kill(r.pid, signo);
  }

  void reap() {
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      int st = 0;
      if (!r.alive || waitpid(r.pid, &st, WNOHANG) != r.pid) continue;
      r.alive = false;
      r.waitStatus = st;
      if (ending_) continue;  // ended by us, or failed after the job was already ending
      if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        say("rank %zu exited with status %d; ending the job", i, WEXITSTATUS(st));
        endJob(WEXITSTATUS(st));
      } else if (WIFSIGNALED(st)) {
        const int s = WTERMSIG(st);
        say("rank %zu was killed by signal %d (%s); ending the job", i, s, signalName(s).c_str());
        endJob(128 + s);
      }
    }
  }

  void onSignals() {
    char buf[64];
    ssize_t n;
    while ((n = read(g_signalPipe[0], buf, sizeof(buf))) > 0)
      for (ssize_t k = 0; k < n; ++k)
        if (buf[k] != SIGCHLD && !ending_) {
          say("got %s; ending the job", signalName(buf[k]).c_str());
          endJob(128 + buf[k]);
        }
  }

  // Milliseconds until the nearest deadline (-1: none), at most 1 s so reaping is never missed.
  int pollTimeoutMs(Clock::time_point drainDeadline, bool draining) const {
    auto next = Clock::now() + std::chrono::seconds(1);
    if (jobDeadline_ && !ending_) next = std::min(next, *jobDeadline_);
    if (killDeadline_ && !killed_) next = std::min(next, *killDeadline_);
    if (draining) next = std::min(next, drainDeadline);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
    return ms < 0 ? 0 : static_cast<int>(ms) + 1;
  }

  void supervise() {
    Clock::time_point drainDeadline{};
    bool draining = false;
    for (;;) {
      std::vector<pollfd> fds{{g_signalPipe[0], POLLIN, 0}};
      std::vector<LineForwarder*> owners{nullptr};
      int live = 0;
      for (Rank& r : ranks_) {
        live += r.alive;
        for (LineForwarder* f : {r.out.get(), r.err.get()})
          if (f != nullptr && f->open()) {
            fds.push_back({f->fd(), POLLIN, 0});
            owners.push_back(f);
          }
      }
      if (live == 0 && !draining) {
        draining = true;
        drainDeadline = Clock::now() + kDrainLimit;
      }
      if (live == 0 && (fds.size() == 1 || Clock::now() >= drainDeadline)) break;

      if (poll(fds.data(), fds.size(), pollTimeoutMs(drainDeadline, draining)) < 0 && errno != EINTR) {
        say("poll failed: %s", strerror(errno));
        endJob(1);
      }
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents != 0) owners[i]->onReadable();
      onSignals();
      reap();
      const auto now = Clock::now();
      if (jobDeadline_ && !ending_ && now >= *jobDeadline_) {
        say("timeout: the job ran past %g s; ending it", o_.timeoutSeconds);
        endJob(kStatusTimeout);
      }
      if (killDeadline_ && !killed_ && now >= *killDeadline_) {
        killed_ = true;
        killAll(SIGKILL);
      }
    }
    for (Rank& r : ranks_) {
      if (r.out) r.out->close();
      if (r.err) r.err->close();
    }
  }

  const Options& o_;
  std::vector<Rank> ranks_;
  bool ending_ = false;
  bool killed_ = false;
  int status_ = 0;
  std::optional<Clock::time_point> jobDeadline_, killDeadline_;
};

}  // namespace
}  // namespace collcomm::ccrun

int main(int argc, char** argv) {
  using namespace collcomm::ccrun;
  Options o;
  const int early = parseOptions(argc, argv, &o);
  if (early >= 0) return early;
  if (!installSignals()) {
    say("cannot set up signal handling: %s", strerror(errno));
    return 1;
  }
  ccUniqueId id;
  const ccResult_t r = ccGetUniqueId(&id);
  if (r != ccSuccess) {
    say("ccGetUniqueId failed: %s: %s", ccGetErrorString(r), ccGetLastError(nullptr));
    return 1;
  }
  char hex[2 * CC_UNIQUE_ID_BYTES + 1];
  ccLaunchEncodeId(&id, hex);
  Job job(o);
  const int status = job.run(hex);
  fflush(stdout);
  // _exit: the job is over; the rendezvous service thread needs no orderly shutdown.
  _exit(status);
}
