// cc_mp_worker: one rank of a multi-process test. collcomm_mp_tests (worker_job.h) spawns nranks of
// these with the job's unique id; each joins with ccCommInitRank and runs one scenario.
//
//   cc_mp_worker --scenario=NAME --nranks=N --rank=R [--id=HEX] [--watchdog=SECONDS]
//
// The id is the 128-byte ccUniqueId as 256 hex digits, from --id or else the CC_MP_UNIQUE_ID
// environment variable, or "commid": ccGetUniqueId from COLLCOMM_COMM_ID on every rank. Scenarios:
// sweep, p2p, die, die-mid, die-p2p, die-shrink, die-shrink-first, linkdown, once, rings, bench, latency, threads,
// leave, hang (see the functions
// below), gpu and gpu-die (mp/gpu_ranks.h).
//
// Exit status: 0 when the scenario held; 1 after printing "FAIL rank R [scenario]: why" on stderr;
// 2 for bad command-line use; 3 (die scenarios, also with a FAIL line) when everything held except
// that the error sentence named another rank than the dead one; 4 (gpu) when init refused the job,
// after a "REFUSED: why" line; 9 is the rank the die scenarios
// kill on purpose; 124 from the watchdog (the scenario did not finish in time).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collcomm.h"
#include "mp/gpu_ranks.h"
#include "support/coll_check.h"
#include "support/op_signal.h"
#include "support/plan_rings.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

struct Args {
  std::string scenario;
  int nranks = 0;
  int rank = -1;
  std::string idHex;
  int watchdogSeconds = 170;
};

std::string g_label = "rank ? [?]";  // "rank R [scenario]", the prefix of every line printed

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", g_label.c_str(), buf);
  fflush(stderr);
}

// Prints the one failure line the driver looks for and returns the failing exit status.
int fail(const std::string& why) {
  fprintf(stderr, "FAIL %s: %s\n", g_label.c_str(), why.c_str());
  fflush(stderr);
  return 1;
}

std::string lastError(ccComm_t comm) {
  const char* e = ccGetLastError(comm);
  return e != nullptr ? e : "(null)";
}

std::string callFailed(const char* call, ccResult_t r, ccComm_t comm) {
  return std::string(call) + " returned " + ccGetErrorString(r) + ": " + lastError(comm);
}

bool parseInt(const char* s, int* out) {
  char* end = nullptr;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0') return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t n = strlen(name);
      return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : nullptr;
    };
    const char* v;
    bool ok = true;
    if ((v = value("--scenario")) != nullptr) {
      a->scenario = v;
    } else if ((v = value("--id")) != nullptr) {
      a->idHex = v;
    } else if ((v = value("--nranks")) != nullptr) {
      ok = parseInt(v, &a->nranks);
    } else if ((v = value("--rank")) != nullptr) {
      ok = parseInt(v, &a->rank);
    } else if ((v = value("--watchdog")) != nullptr) {
      ok = parseInt(v, &a->watchdogSeconds);
    } else {
      ok = false;
    }
    if (!ok) return false;
  }
  if (a->idHex.empty())
    if (const char* env = getenv("CC_MP_UNIQUE_ID")) a->idHex = env;
  return !a->scenario.empty() && a->nranks >= 1 && a->rank >= 0 && a->rank < a->nranks && a->watchdogSeconds > 0;
}

bool decodeHexId(const std::string& hex, ccUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    unsigned v;
    if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    id->internal[i] = static_cast<char>(v);
  }
  return true;
}

// ---- sweep: the thread sweep's conformance cases, ranks as processes ----

int runSweep(ccComm_t comm, int rank, int nranks) {
  const auto cases = conformanceCases(nranks, /*withLarge=*/nranks <= 3);
  const auto t0 = std::chrono::steady_clock::now();
  for (const CaseSpec& c : cases) {
    std::string f = runCase(comm, rank, nranks, c);
    // Stop at the first failure: the peers then see this process leave and fail fast too.
    if (!f.empty()) return fail(f);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  say("%zu cases passed in %.1f s", cases.size(), s);
  return 0;
}

// ---- rings: the plan's rings, then exact results on them ----

// Prints "plan {json}" for an AllReduce of 16 MiB (the driver reads the rings from it), then runs
// that AllReduce and the sweep, every result checked exactly.
int runRings(ccComm_t comm, int rank, int nranks) {
  const size_t count = size_t{4} << 20;
  const std::string json = allReducePlanJson(comm, count);
  if (json.empty()) return fail("ccCommDescribePlan failed: " + lastError(comm));
  say("plan %s", json.c_str());
  const std::string f = runCase(comm, rank, nranks, CaseSpec{Coll::kAllReduce, ccFloat32, ccSum, count, false, 0});
  if (!f.empty()) return fail(f);
  return runSweep(comm, rank, nranks);
}

// ---- bench: AllReduce bus bandwidth at 16 MiB ----

// CC_MP_BENCH_ITERS timed AllReduces (default 10) after 2 untimed ones; prints "busbw X GB/s" as
// nccl-tests counts it (algbw x 2(n-1)/n) and checks the last result exactly.
int runBench(ccComm_t comm, int rank, int nranks) {
  const char* env = getenv("CC_MP_BENCH_ITERS");
  const int iters = env != nullptr ? atoi(env) : 10;
  if (iters < 1) return fail("CC_MP_BENCH_ITERS must be a positive number");
  const size_t count = size_t{4} << 20;
  std::vector<float> send(count, static_cast<float>(rank + 1)), recv(count, 0.0f);
  std::chrono::steady_clock::time_point t0;
  for (int i = 0; i < 2 + iters; ++i) {
    if (i == 2) t0 = std::chrono::steady_clock::now();
    const ccResult_t r = ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
    if (r != ccSuccess) return fail(callFailed("ccAllReduce", r, comm));
    if (i == 1 + iters) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
      const double algbw = static_cast<double>(count * sizeof(float)) / s / 1e9;
      say("allreduce 16 MiB: %.3f ms, algbw %.3f GB/s, busbw %.3f GB/s", s * 1e3, algbw,
          algbw * 2.0 * (nranks - 1) / nranks);
    }
  }
  const float want = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2.0f;
  for (size_t i = 0; i < count; ++i)
    if (recv[i] != want) return fail("allreduce element " + std::to_string(i) + " is " + std::to_string(recv[i]));
  return 0;
}

// ---- latency: the mean time of small and medium AllReduces (tree against ring, by hand) ----

// For each size (bytes): 2 warm-up calls, then CC_MP_BENCH_ITERS calls (default 200; a quarter
// from 64 KiB) between two barriers' worth of AllReduces; rank 0 prints "allreduce N B: T us".
// The result is checked exactly (every rank contributes rank + 1).
int runLatency(ccComm_t comm, int rank, int nranks) {
  const char* env = getenv("CC_MP_BENCH_ITERS");
  const int baseIters = env != nullptr ? atoi(env) : 200;
  if (baseIters < 4) return fail("CC_MP_BENCH_ITERS must be at least 4");
  // CC_MP_LATENCY_SIZES: a comma-separated list of sizes in bytes instead (e.g. 8,1024).
  std::vector<size_t> sizes = {size_t{8}, size_t{1} << 10, size_t{64} << 10, size_t{1} << 20};
  if (const char* list = getenv("CC_MP_LATENCY_SIZES"); list != nullptr && list[0] != '\0') {
    sizes.clear();
    for (const char* p = list; *p != '\0';) {
      char* end = nullptr;
      const unsigned long long v = strtoull(p, &end, 10);
      if (end == p || v < sizeof(float)) return fail(std::string("CC_MP_LATENCY_SIZES is not a list of sizes: ") + list);
      sizes.push_back(static_cast<size_t>(v));
      p = *end == ',' ? end + 1 : end;
    }
  }
  for (size_t bytes : sizes) {
    const size_t count = bytes / sizeof(float);
    const int iters = bytes >= (size_t{64} << 10) ? baseIters / 4 : baseIters;
    std::vector<float> send(count, static_cast<float>(rank + 1)), recv(count, 0.0f);
    std::chrono::steady_clock::time_point t0;
    for (int i = 0; i < 2 + iters; ++i) {
      if (i == 2) t0 = std::chrono::steady_clock::now();
      const ccResult_t r = ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
      if (r != ccSuccess) return fail(callFailed("ccAllReduce", r, comm));
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    if (rank == 0) say("allreduce %zu B: %.1f us", bytes, us);
    const float want = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2.0f;
    for (size_t i = 0; i < count; ++i)
      if (recv[i] != want) return fail("allreduce element " + std::to_string(i) + " is " + std::to_string(recv[i]));
  }
  return 0;
}

// ---- once: many processes, each under the default descriptor limit, init and one AllReduce ----

// The soft RLIMIT_NOFILE most systems start processes with; workerMain sets it before init.
constexpr rlim_t kDefaultFdLimit = 1024;

int runOnce(ccComm_t comm, int rank, int nranks) {
  const std::string f = runCase(comm, rank, nranks, CaseSpec{Coll::kAllReduce, ccInt32, ccSum, 1001, false, 0});
  if (!f.empty()) return fail(f);
  if (rank == 0) say("AllReduce of 1001 int32 over %d processes exact", nranks);
  return 0;
}

// ---- threads: several thread ranks in each process (CC_MP_THREADS of them, default 3) ----

// Process `proc` of `procs` runs ranks proc*T .. proc*T+T-1 of procs*T, each on its own thread:
// init, AllReduce, AllGather and AlltoAll (which connects every pair of ranks, in this process
// and across), all checked exactly, then destroy. Ranks of one process share its bootstrap part.
int runThreadRanks(const ccUniqueId& id, int proc, int procs) {
  const char* env = getenv("CC_MP_THREADS");
  const int perProc = env != nullptr ? atoi(env) : 3;
  if (perProc < 1) return fail("CC_MP_THREADS must be a positive number");
  const int nranks = procs * perProc;
  std::vector<std::string> errors(perProc);
  std::vector<std::thread> threads;
  for (int i = 0; i < perProc; ++i) {
    threads.emplace_back([&, i] {
      const int rank = proc * perProc + i;
      ccComm_t comm = nullptr;
      const ccResult_t r = ccCommInitRank(&comm, nranks, id, rank);
      if (r != ccSuccess) {
        errors[i] = callFailed("ccCommInitRank", r, nullptr);
        return;
      }
      for (Coll c : {Coll::kAllReduce, Coll::kAllGather, Coll::kAlltoAll}) {
        errors[i] = runCase(comm, rank, nranks, CaseSpec{c, ccInt32, ccSum, 257, false, 0});
        if (!errors[i].empty()) break;
      }
      if (errors[i].empty()) {
        ccCommDestroy(comm);
      } else {
        ccCommAbort(comm);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < perProc; ++i)
    if (!errors[i].empty()) return fail("rank " + std::to_string(proc * perProc + i) + ": " + errors[i]);
  say("%d thread ranks of %d passed", perProc, nranks);
  return 0;
}

// ---- leave: a thread rank leaves; a rank of another process waiting for it hears so at once ----

// Two processes of two thread ranks each (ranks 0,1 | 2,3), on the bootstrap alone: after a
// barrier rank 1 destroys its bootstrap while rank 0 keeps process 0 in the job; rank 2's wait for
// a message from rank 1 must end with a sentence naming it within 3 s, not at the deadline.
int runLeave(const ccUniqueId& uid, int proc) {
  using namespace collcomm::detail;
  UniqueIdData id{};
  if (decodeUniqueId(uid, &id) != kOk) return fail("the unique id does not decode");
  std::string errors[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i) {
    threads[i] = std::thread([&, i] {
      const int rank = proc * 2 + i;
      const Deadline d = Deadline::afterSeconds(10);
      std::unique_ptr<Bootstrap> b;
      std::string& err = errors[i];
      if (Bootstrap::init(id, rank, 4, d, &b) != kOk) {
        err = "init: " + threadLastError();
        return;
      }
      if (b->barrier(d) != kOk) {
        err = "barrier: " + threadLastError();
        return;
      }
      uint8_t byte = 0;
      if (rank == 2) {
        const auto t0 = std::chrono::steady_clock::now();
        const Status s = b->recv(1, 77, &byte, 1, d);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string msg = threadLastError();
        if (s != Status::kRemoteError || msg.find("rank 1 (host ") == std::string::npos || took > 3)
          err = "waiting for the rank that left ended after " + std::to_string(took) + " s with \"" + msg + "\"";
        if (b->send(0, 78, &byte, 1, d) != kOk) err += " send: " + threadLastError();
      } else if (rank == 0 && b->recv(2, 78, &byte, 1, d) != kOk) {
        err = "recv: " + threadLastError();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 2; ++i)
    if (!errors[i].empty()) return fail("rank " + std::to_string(proc * 2 + i) + ": " + errors[i]);
  return 0;
}

// ---- p2p: grouped send/recv patterns and ccCommSplit ----

// Value of element i of the block that `from` sends to `to` (exact in int32).
int32_t p2pValue(int from, int to, size_t i) {
  return static_cast<int32_t>((from * 1000003 + to * 7919 + static_cast<int64_t>(i) * 31) % 2000000011);
}

std::string checkBlock(const std::vector<int32_t>& got, size_t off, size_t count, int from, int to) {
  for (size_t i = 0; i < count; ++i) {
    if (got[off + i] != p2pValue(from, to, i)) {
      char buf[200];
      snprintf(buf, sizeof(buf), "block from rank %d to rank %d, element %zu of %zu: got %d, expected %d", from, to, i,
               count, got[off + i], p2pValue(from, to, i));
      return buf;
    }
  }
  return "";
}

std::string ringShift(ccComm_t comm, int rank, int nranks, size_t count) {
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  std::vector<int32_t> send(count), recv(count + 1, -7);
  for (size_t i = 0; i < count; ++i) send[i] = p2pValue(rank, next, i);
  ccResult_t r = ccGroupStart();
  if (r != ccSuccess) return callFailed("ccGroupStart", r, nullptr);
  ccResult_t rs = ccSend(send.data(), count, ccInt32, next, comm, nullptr);
  ccResult_t rr = ccRecv(recv.data(), count, ccInt32, prev, comm, nullptr);
  r = ccGroupEnd();
  if (rs != ccSuccess) return callFailed("ccSend (ring shift)", rs, comm);
  if (rr != ccSuccess) return callFailed("ccRecv (ring shift)", rr, comm);
  if (r != ccSuccess) return callFailed("ccGroupEnd (ring shift)", r, comm);
  std::string bad = checkBlock(recv, 0, count, prev, rank);
  if (bad.empty() && recv[count] != -7) bad = "ccRecv wrote past the end of its buffer";
  return bad.empty() ? "" : "ring shift of " + std::to_string(count) + " elements: " + bad;
}

// Every rank sends a distinct block to every rank (itself included) and receives one from each.
std::string allPairs(ccComm_t comm, int rank, int nranks, size_t count) {
  std::vector<int32_t> send(count * nranks), recv(count * nranks, -7);
  for (int p = 0; p < nranks; ++p)
    for (size_t i = 0; i < count; ++i) send[p * count + i] = p2pValue(rank, p, i);
  ccResult_t r = ccGroupStart();
  if (r != ccSuccess) return callFailed("ccGroupStart", r, nullptr);
  for (int k = 0; k < nranks; ++k) {
    // Stagger the order so that not every rank posts to rank 0 first.
    const int p = (rank + k) % nranks;
    ccResult_t rs = ccSend(send.data() + p * count, count, ccInt32, p, comm, nullptr);
    if (rs != ccSuccess) {
      ccGroupEnd();
      return callFailed("ccSend (all pairs)", rs, comm);
    }
    const int q = (rank + nranks - k) % nranks;
    ccResult_t rr = ccRecv(recv.data() + q * count, count, ccInt32, q, comm, nullptr);
    if (rr != ccSuccess) {
      ccGroupEnd();
      return callFailed("ccRecv (all pairs)", rr, comm);
    }
  }
  r = ccGroupEnd();
  if (r != ccSuccess) return callFailed("ccGroupEnd (all pairs)", r, comm);
  for (int p = 0; p < nranks; ++p) {
    std::string bad = checkBlock(recv, p * count, count, p, rank);
    if (!bad.empty()) return "all-pairs exchange of " + std::to_string(count) + " elements: " + bad;
  }
  return "";
}

// Blocking send/recv outside a group between rank pairs (0,1), (2,3), ...: the even rank sends
// first, the odd one receives first, then the other way round.
std::string pingPong(ccComm_t comm, int rank, int nranks, size_t count) {
  const int peer = rank ^ 1;
  if (peer >= nranks) return "";
  std::vector<int32_t> send(count), recv(count, -7);
  for (size_t i = 0; i < count; ++i) send[i] = p2pValue(rank, peer, i);
  for (int turn = 0; turn < 2; ++turn) {
    const bool sending = (turn == 0) == (rank % 2 == 0);
    ccResult_t r = sending ? ccSend(send.data(), count, ccInt32, peer, comm, nullptr)
                           : ccRecv(recv.data(), count, ccInt32, peer, comm, nullptr);
    if (r != ccSuccess) return callFailed(sending ? "ccSend (ping-pong)" : "ccRecv (ping-pong)", r, comm);
  }
  std::string bad = checkBlock(recv, 0, count, peer, rank);
  return bad.empty() ? "" : "ping-pong of " + std::to_string(count) + " elements: " + bad;
}

// Even/odd split with reversed keys: within a color the highest parent rank comes first.
std::string splitEvenOdd(ccComm_t comm, int rank, int nranks) {
  ccComm_t sub = nullptr;
  const int color = rank % 2;
  ccResult_t r = ccCommSplit(comm, color, nranks - rank, &sub, nullptr);
  if (r != ccSuccess) return callFailed("ccCommSplit (even/odd)", r, comm);
  if (sub == nullptr) return "ccCommSplit (even/odd) gave a NULL communicator to a rank with a color";
  std::vector<int> members;  // parent ranks in sub-communicator order
  for (int p = nranks - 1; p >= 0; --p)
    if (p % 2 == color) members.push_back(p);
  const int wantSize = static_cast<int>(members.size());
  int wantRank = 0;
  while (members[wantRank] != rank) ++wantRank;
  std::string err;
  int n = -1, me = -1;
  if ((r = ccCommCount(sub, &n)) != ccSuccess || (r = ccCommUserRank(sub, &me)) != ccSuccess)
    err = callFailed("ccCommCount/ccCommUserRank on the split communicator", r, sub);
  else if (n != wantSize || me != wantRank)
    err = "split communicator is rank " + std::to_string(me) + " of " + std::to_string(n) + ", expected rank " +
          std::to_string(wantRank) + " of " + std::to_string(wantSize);
  if (err.empty()) {
    // The order, seen through the data: every member contributes its parent rank.
    std::vector<int32_t> got(wantSize, -1);
    int32_t mine = rank;
    if ((r = ccAllGather(&mine, got.data(), 1, ccInt32, sub, nullptr)) != ccSuccess)
      err = callFailed("ccAllGather on the split communicator", r, sub);
    for (int i = 0; err.empty() && i < wantSize; ++i)
      if (got[i] != members[i])
        err = "ccAllGather on the split communicator: slot " + std::to_string(i) + " holds parent rank " +
              std::to_string(got[i]) + ", expected " + std::to_string(members[i]);
  }
  if (err.empty()) {
    CaseSpec c{Coll::kAllReduce, ccInt32, ccSum, 4099, false, 0};
    err = runCase(sub, wantRank, wantSize, c);
    if (err.empty()) err = runCase(sub, wantRank, wantSize, {Coll::kAllReduce, ccFloat32, ccMax, 100003, true, 0});
    if (!err.empty()) err = "on the even/odd split communicator: " + err;
  }
  ccResult_t rd = ccCommDestroy(sub);
  if (err.empty() && rd != ccSuccess) err = callFailed("ccCommDestroy (split communicator)", rd, nullptr);
  return err;
}

// The last rank opts out with CC_SPLIT_NOCOLOR; the others keep their order.
std::string splitNoColor(ccComm_t comm, int rank, int nranks) {
  ccComm_t sub = reinterpret_cast<ccComm_t>(0x1);  // must be overwritten with NULL for the opting-out rank
  const bool out = rank == nranks - 1;
  ccResult_t r = ccCommSplit(comm, out ? CC_SPLIT_NOCOLOR : 0, rank, &sub, nullptr);
  if (r != ccSuccess) return callFailed("ccCommSplit (CC_SPLIT_NOCOLOR)", r, comm);
  if (out) return sub == nullptr ? "" : "ccCommSplit with CC_SPLIT_NOCOLOR did not set *newcomm to NULL";
  if (sub == nullptr) return "ccCommSplit gave a NULL communicator to a rank with color 0";
  std::string err = runCase(sub, rank, nranks - 1, {Coll::kAllReduce, ccInt64, ccSum, 1001, false, 0});
  if (!err.empty()) err = "on the split communicator without the last rank: " + err;
  ccResult_t rd = ccCommDestroy(sub);
  if (err.empty() && rd != ccSuccess) err = callFailed("ccCommDestroy (split communicator)", rd, nullptr);
  return err;
}

int runP2p(ccComm_t comm, int rank, int nranks) {
  for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, size_t{(1u << 20) + 3}}) {
    std::string f = ringShift(comm, rank, nranks, count);
    if (f.empty()) f = allPairs(comm, rank, nranks, count / 4 + (count & 1));
    if (f.empty()) f = pingPong(comm, rank, nranks, count);
    if (!f.empty()) return fail(f);
  }
  std::string f = splitEvenOdd(comm, rank, nranks);
  if (f.empty()) f = splitNoColor(comm, rank, nranks);
  if (f.empty()) f = runCase(comm, rank, nranks, {Coll::kAllReduce, ccInt32, ccSum, 1001, false, 0});
  if (!f.empty()) return fail(f);
  say("p2p and split checks passed");
  return 0;
}

// ---- die / die-mid / die-p2p: the last rank exits in the middle of the job ----

// Exit status of a survivor that saw the failure, aborted promptly and whose error sentence names
// a rank and this host, but not the dead rank (a peer that left because of it instead).
constexpr int kExitNamedAnotherRank = 3;

// How long ccCommAbort may take after a peer died: about a second, in every build. It waits on no
// peer; its cost is CPU, so under load it stretches: over OFI/tcp it once spent 50-90 ms of CPU
// closing libfabric endpoints (rxm's 16 KiB bounce-buffer pools) and took 1.5 s in CI's loaded
// sanitizer stage; the backend now asks rxm for 1 KiB buffers there (net_ofi_lib.cc), and the
// abort takes 0.03-0.11 s beside four busy loops on two cores.
constexpr double kAbortBoundS = 1.2;

// `die-p2p`'s survivors: rank 0 receives from rank 1 and then from the dead rank in one group, so
// the batch's first waiting transfer is with a live peer; the others receive from rank 0, which
// sends nothing, so rank 1 stays alive and waiting. Rank 0 must find the dead rank as fast as if it
// were the first peer it waits on, not at the deadline.
ccResult_t receiveFromTheLivingAndTheDead(ccComm_t comm, int rank, int victim, std::vector<float>& a,
                                          std::vector<float>& b) {
  const size_t count = size_t{1} << 20;
  if (rank != 0) return ccRecv(a.data(), count, ccFloat32, 0, comm, nullptr);
  ccResult_t r = ccGroupStart();
  if (r != ccSuccess) return r;
  (void)ccRecv(a.data(), count, ccFloat32, 1, comm, nullptr);
  (void)ccRecv(b.data(), count, ccFloat32, victim, comm, nullptr);
  return ccGroupEnd();
}

// `die`: the last rank exits right after one good allreduce, before the others start a large one.
// `die-mid`: the last rank joins the large allreduce too and exits 20 ms into it (counted from when
// its allreduce is inside the library, so a late start cannot turn it into `die`; the 20 ms are the
// scenario's, a deliberate delay that lets the ranks start moving data before one dies).
// `die-p2p`: as `die`, with the survivors in point-to-point calls (receiveFromTheLivingAndTheDead).
int runDie(ccComm_t comm, int rank, int nranks, bool midOperation, bool p2p = false) {
  if (nranks < (p2p ? 3 : 2)) return fail("the die scenarios need at least 2 ranks (die-p2p: 3)");
  std::string f = runCase(comm, rank, nranks, {Coll::kAllReduce, ccFloat32, ccSum, 1001, false, 0});
  if (!f.empty()) return fail("the allreduce before the failure: " + f);
  // die-p2p: point-to-point connections are made at a pair's first transfer, with both ranks'
  // help; an AlltoAll makes every pair's while all are alive, so the receives below only wait.
  if (p2p) f = runCase(comm, rank, nranks, {Coll::kAlltoAll, ccFloat32, ccSum, 64, false, 0});
  if (!f.empty()) return fail("the alltoall before the failure: " + f);
  const int victim = nranks - 1;
  const size_t count = size_t{16} << 20;
  std::vector<float> send(count, 1.0f), recv(count, 0.0f);
  if (rank == victim) {
    say("exiting with status 9 on purpose%s", midOperation ? " 20 ms into a large allreduce" : "");
    if (!midOperation) _exit(9);
    static collcomm::test::OpEntry entry(comm);
    std::thread([] {
      (void)entry.waitInside();  // at the deadline it exits all the same
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      _exit(9);
    }).detach();
    entry.announce();
    ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
    _exit(9);
  }
  const auto t0 = std::chrono::steady_clock::now();
  ccResult_t r = ccSuccess;
  // die-mid: should the victim get through a whole allreduce before its timer fires, the next one fails.
  int calls = 0;
  while (calls < 3 && r == ccSuccess) {
    ++calls;
    r = p2p ? receiveFromTheLivingAndTheDead(comm, rank, victim, send, recv)
            : ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
  }
  const double failS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string msg = lastError(comm);
  const char* what = p2p ? "receive" : "allreduce";
  say("%s %d with rank %d gone returned %s after %.2f s: %s", what, calls, victim, ccGetErrorString(r), failS,
      msg.c_str());
  if (r != ccRemoteError && r != ccTimeout)
    return fail(std::string("a ") + what + " with rank " + std::to_string(victim) + " dead returned " +
                ccGetErrorString(r) + ", expected ccRemoteError or ccTimeout");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  // "rank 2 (host H" must not match inside "rank 20 (host H": the format is the library's.
  const std::string wantPeer = "rank " + std::to_string(victim) + " (host " + host;
  const bool namesVictim = msg.find(wantPeer) != std::string::npos;
  const bool namesSomePeer = msg.find(std::string(" (host ") + host) != std::string::npos;
  if (!namesSomePeer)
    return fail("ccGetLastError names no peer on host \"" + std::string(host) + "\": \"" + msg + "\"");
  const auto t1 = std::chrono::steady_clock::now();
  r = ccCommAbort(comm);
  const double abortS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (r != ccSuccess) return fail(callFailed("ccCommAbort", r, nullptr));
  if (abortS > kAbortBoundS)
    return fail("ccCommAbort took " + std::to_string(abortS) + " s, expected " + std::to_string(kAbortBoundS) +
                " s at most");
  say("ccCommAbort returned in %.3f s", abortS);
  if (!namesVictim) {
    fail("ccGetLastError does not name the dead peer (\"" + wantPeer + ")\"): \"" + msg + "\"");
    return kExitNamedAnotherRank;
  }
  return 0;
}

// ---- die-shrink / die-shrink-first: the survivors exclude the dead rank and go on ----

// One rank exits after a good allreduce (die-shrink: the last; die-shrink-first: rank 0, the
// parent's bootstrap rank 0). The survivors' next allreduce fails naming it; they then shrink the
// communicator by it with CC_SHRINK_ABORT and run a sweep of every collective on the new one, each
// result exact, and free both. The new communicator's ranks are the survivors in the parent's order.
int runDieShrink(ccComm_t comm, int rank, int nranks, int victim) {
  if (nranks < 3) return fail("the die-shrink scenarios need at least 3 ranks");
  std::string f = runCase(comm, rank, nranks, {Coll::kAllReduce, ccFloat32, ccSum, 1001, false, 0});
  if (!f.empty()) return fail("the allreduce before the failure: " + f);
  if (rank == victim) {
    say("exiting with status 9 on purpose");
    _exit(9);
  }
  const size_t count = size_t{1} << 20;
  std::vector<float> send(count, 1.0f), recv(count, 0.0f);
  ccResult_t r = ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
  const std::string msg = lastError(comm);
  say("allreduce with rank %d gone returned %s: %s", victim, ccGetErrorString(r), msg.c_str());
  if (r != ccRemoteError && r != ccTimeout)
    return fail(std::string("the allreduce with a dead rank returned ") + ccGetErrorString(r));
  // Named directly, or as the cause a peer left for ("rank V (host H) exited, and rank ...").
  if (msg.find("rank " + std::to_string(victim) + " (host ") == std::string::npos)
    return fail("the allreduce's sentence does not name the dead rank: \"" + msg + "\"");
  const auto t0 = std::chrono::steady_clock::now();
  ccComm_t sub = nullptr;
  r = ccCommShrink(comm, &victim, 1, &sub, nullptr, CC_SHRINK_ABORT);
  const double shrinkS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r != ccSuccess) return fail(callFailed("ccCommShrink", r, comm));
  const int subRank = rank - (rank > victim ? 1 : 0);
  int gotRank = -1, gotCount = 0;
  ccCommUserRank(sub, &gotRank);
  ccCommCount(sub, &gotCount);
  say("ccCommShrink returned in %.3f s: rank %d of %d", shrinkS, gotRank, gotCount);
  if (gotRank != subRank || gotCount != nranks - 1)
    f = "the shrunk communicator made this rank " + std::to_string(gotRank) + " of " + std::to_string(gotCount);
  if (f.empty() && runSweep(sub, subRank, nranks - 1) != 0) f = "the sweep on the shrunk communicator failed";
  if (!f.empty()) {
    ccCommAbort(sub);
    ccCommAbort(comm);
    return fail(f);
  }
  r = ccCommDestroy(sub);
  if (r != ccSuccess) return fail(callFailed("ccCommDestroy of the shrunk communicator", r, nullptr));
  r = ccCommAbort(comm);
  if (r != ccSuccess) return fail(callFailed("ccCommAbort of the parent", r, nullptr));
  return 0;
}

// ---- linkdown: a host's link goes down while large allreduces run ----

// Every rank runs large allreduces back to back until one fails (the driver takes a host's link
// down meanwhile); it must fail with ccRemoteError or ccTimeout, and the sentence must name a rank
// and its host (COLLCOMM_HOSTID "host..."). Then ccCommAbort must return promptly.
int runLinkDown(ccComm_t comm, int rank, int nranks) {
  const size_t count = size_t{4} << 20;
  std::vector<float> send(count, 1.0f), recv(count, 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  ccResult_t r = ccSuccess;
  int calls = 0;
  while (r == ccSuccess && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(40)) {
    ++calls;
    r = ccAllReduce(send.data(), recv.data(), count, ccFloat32, ccSum, comm, nullptr);
    if (calls == 1 && r == ccSuccess) say("first allreduce done");
    if (r == ccSuccess && recv[count - 1] != static_cast<float>(nranks))
      return fail("allreduce " + std::to_string(calls) + " before the failure gave a wrong sum");
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string msg = lastError(comm);
  say("allreduce %d returned %s after %.2f s: %s", calls, ccGetErrorString(r), s, msg.c_str());
  if (r != ccRemoteError && r != ccTimeout)
    return fail(std::string("expected ccRemoteError or ccTimeout once a link went down, got ") + ccGetErrorString(r));
  if (msg.find(" (host host") == std::string::npos || msg.find("rank ") == std::string::npos)
    return fail("ccGetLastError names no rank with its host: \"" + msg + "\"");
  const auto t1 = std::chrono::steady_clock::now();
  r = ccCommAbort(comm);
  const double abortS = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (r != ccSuccess) return fail(callFailed("ccCommAbort", r, nullptr));
  if (abortS > kAbortBoundS) return fail("ccCommAbort took " + std::to_string(abortS) + " s");
  (void)rank;
  return 0;
}

int runDieEarly(ccComm_t comm, int rank, int nranks) { return runDie(comm, rank, nranks, false); }
int runDieMid(ccComm_t comm, int rank, int nranks) { return runDie(comm, rank, nranks, true); }
int runDieP2p(ccComm_t comm, int rank, int nranks) { return runDie(comm, rank, nranks, false, true); }
int runDieShrinkLast(ccComm_t comm, int rank, int nranks) { return runDieShrink(comm, rank, nranks, nranks - 1); }
int runDieShrinkFirst(ccComm_t comm, int rank, int nranks) { return runDieShrink(comm, rank, nranks, 0); }

int workerMain(int argc, char** argv) {
  Args a;
  if (!parseArgs(argc, argv, &a)) {
    fprintf(stderr,
            "usage: %s "
            "--scenario=sweep|p2p|die|die-mid|die-p2p|die-shrink|die-shrink-first|linkdown|once|rings|bench|threads|"
            "leave|hang|gpu|gpu-die "
            "--nranks=N "
            "--rank=R "
            "[--id=HEX|commid]\n"
            "       [--watchdog=SECONDS]\n"
            "       (the id may come from CC_MP_UNIQUE_ID instead of --id)\n",
            argv[0]);
    return 2;
  }
  g_label = "rank " + std::to_string(a.rank) + " [" + a.scenario + "]";
  ccUniqueId id;
  // --id=commid: every rank makes the id itself from COLLCOMM_COMM_ID (the same on all of them; the
  // rank whose host owns that address starts the root), for ranks the driver cannot reach.
  if (a.idHex == "commid") {
    const ccResult_t r = ccGetUniqueId(&id);
    if (r != ccSuccess) return fail(callFailed("ccGetUniqueId (COLLCOMM_COMM_ID)", r, nullptr));
  } else if (!decodeHexId(a.idHex, &id))
    return fail("the unique id is not " + std::to_string(2 * sizeof(id.internal)) +
                " hex digits (pass --id=HEX or CC_MP_UNIQUE_ID)");
  // `hang`: never finishes (no init either), for the driver's check of its own deadline.
  if (a.scenario == "hang") {
    Watchdog dog(a.watchdogSeconds, g_label);
    for (;;) pause();
  }
  // `threads`: --rank and --nranks count processes; each runs several ranks (no single init here).
  if (a.scenario == "threads") {
    Watchdog dog(a.watchdogSeconds, g_label);
    return runThreadRanks(id, a.rank, a.nranks);
  }
  if (a.scenario == "leave") {
    Watchdog dog(a.watchdogSeconds, g_label);
    return runLeave(id, a.rank);
  }
  // `gpu`: a GPU rank (its own init, on CC_MP_GPU_DEVICE). A refusal at init prints "REFUSED: why"
  // and exits 4, for the driver to judge. `gpu-die`: the last rank exits after init (status 9).
  // `gpu-leave`: the last rank leaves cleanly after an AllReduce, ranks 0 and 1 go on (gpu_ranks.h).
  if (a.scenario == "gpu-leave") {
    Watchdog dog(a.watchdogSeconds, g_label);
    std::string refusal;
    const std::string why = runGpuLeave(id, a.rank, a.nranks, &refusal);
    if (!refusal.empty()) {
      say("REFUSED: %s", refusal.c_str());
      return 4;
    }
    if (!why.empty()) return fail(why);
    say("rank %d done; ranks 0 and 1 exchanged exactly after rank %d left", a.rank, a.nranks - 1);
    return 0;
  }
  if (a.scenario == "gpu" || a.scenario == "gpu-die") {
    Watchdog dog(a.watchdogSeconds, g_label);
    std::string refusal;
    const int dying = a.scenario == "gpu-die" ? a.nranks - 1 : -1;
    const std::string why = runGpuRank(id, a.rank, a.nranks, dying, &refusal);
    if (!refusal.empty()) {
      say("REFUSED: %s", refusal.c_str());
      return 4;
    }
    if (!why.empty()) return fail(why);
    if (dying >= 0)
      say("AllReduce failed naming rank %d, whose process exited", dying);
    else
      say("AllReduce, AllGather and ReduceScatter of 1 to 1M int32 on GPU ranks of %d processes exact", a.nranks);
    return 0;
  }
  int (*scenario)(ccComm_t, int, int) = a.scenario == "sweep"              ? runSweep
                                        : a.scenario == "p2p"              ? runP2p
                                        : a.scenario == "die"              ? runDieEarly
                                        : a.scenario == "die-mid"          ? runDieMid
                                        : a.scenario == "die-p2p"          ? runDieP2p
                                        : a.scenario == "die-shrink"       ? runDieShrinkLast
                                        : a.scenario == "die-shrink-first" ? runDieShrinkFirst
                                        : a.scenario == "linkdown"         ? runLinkDown
                                        : a.scenario == "once"             ? runOnce
                                        : a.scenario == "rings"            ? runRings
                                        : a.scenario == "bench"            ? runBench
                                        : a.scenario == "latency"          ? runLatency
                                                                           : nullptr;
  if (scenario == nullptr)
    return fail(
        "unknown scenario \"" + a.scenario +
        "\" (sweep, p2p, die, die-mid, die-p2p, die-shrink, die-shrink-first, linkdown, once, rings, bench, latency or "
        "hang)");
  if (a.scenario == "once") {
    rlimit limit{};
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = std::min(kDefaultFdLimit, limit.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return fail(std::string("setrlimit: ") + strerror(errno));
  }
  // Ends this process with a message if the scenario hangs; the driver's own deadline is later.
  Watchdog dog(a.watchdogSeconds, g_label);
  ccComm_t comm = nullptr;
  ccResult_t r = ccCommInitRank(&comm, a.nranks, id, a.rank);
  if (r != ccSuccess) return fail(callFailed("ccCommInitRank", r, nullptr));
  const int status = scenario(comm, a.rank, a.nranks);
  if (a.scenario == "die" || a.scenario == "die-mid" || a.scenario == "die-p2p" || a.scenario == "linkdown" ||
      a.scenario.rfind("die-shrink", 0) == 0)
    return status;  // the communicator was aborted
  if (status != 0) {
    ccCommAbort(comm);  // the peers see this rank leave and fail fast instead of timing out
    return status;
  }
  r = ccCommFinalize(comm);
  if (r != ccSuccess) return fail(callFailed("ccCommFinalize", r, comm));
  r = ccCommDestroy(comm);
  if (r != ccSuccess) return fail(callFailed("ccCommDestroy", r, nullptr));
  return 0;
}

}  // namespace
}  // namespace collcomm::test

int main(int argc, char** argv) { return collcomm::test::workerMain(argc, argv); }
