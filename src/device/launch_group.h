// The host rendezvous behind one kernel launch for the ranks of a communicator that share a CUDA
// device in one process (docs/gpu.md, "Ranks sharing a GPU").
//
// Ranks sharing a GPU that each launch their own kernels can hold each other back in CUDA's
// hardware queues until the timeout; launched as one kernel whose blocks serve every rank, the
// waiting on peers stays inside that kernel. A launch group is those ranks (its members). In every
// round each member arrives once, with what its operation needs (its payload); the member that
// arrives last runs the launch with every member's payload, in member order, and every member of
// the round returns the launch's status. No CUDA here: the rendezvous is tested without a GPU.
// Control tier (a mutex and a condition variable; the launch runs outside the lock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace collcomm::detail {

class LaunchGroup {
 public:
  // payloads[i] is member i's. Runs once per round, on the thread of the last member to arrive.
  using Launch = std::function<Status(std::span<const void* const> payloads)>;

  // One member's part of a round: its index in the group and its payload.
  struct Arrival {
    int member;
    const void* payload;
  };

  // ranks: each member's rank in the communicator, in member order; device: the CUDA device they
  // share (both only name them in messages).
  LaunchGroup(std::vector<int> ranks, int device);

  // One round for `arrivals`: one member, or several where one thread drives several ranks
  // (ccGroupStart/ccGroupEnd). Waits until every member has arrived, then returns the launch's
  // status (with its sentence as this thread's last error). A round the launch ran in is never
  // abandoned. Fails, with nothing launched:
  //   kTimeout naming the ranks that did not arrive by `deadline` (the group is then stopped: the
  //   members' next operations would pair with the wrong rounds);
  //   the first failure's code once the group is stopped (a timeout, or abort());
  //   kInvalidUsage for a member out of range or already arrived in this round.
  Status arrive(std::span<const Arrival> arrivals, const Launch& launch, Deadline deadline);

  // Stops the group: members waiting now and every later arrival fail with kRemoteError naming
  // `rank` as the one whose communicator was aborted. A round whose launch runs is not stopped.
  void abort(int rank);

  int members() const { return static_cast<int>(ranks_.size()); }
  int device() const { return device_; }
  const std::vector<int>& ranks() const { return ranks_; }
  // Members arrived in the round being gathered (for tests that must know a member waits).
  int arrivedThisRound() const;
  // Rounds whose launch has run.
  uint64_t roundsLaunched() const;

 private:
  // A status with its sentence: a round's launch's, or why the group stopped (kOk while it has not).
  struct Outcome {
    Status code = kOk;
    std::string sentence;
  };

  Status refuseLocked(std::span<const Arrival> arrivals) const;
  std::string missingRanksLocked() const;
  std::string sameThreadHintLocked() const;
  Status runRound(std::unique_lock<std::mutex>& lock, const Launch& launch);
  static Status fail(const Outcome& outcome);

  const std::vector<int> ranks_;
  const int device_;
  mutable std::mutex mu_;
  std::condition_variable roundDone_;
  uint64_t round_ = 0;      // the round being gathered; those before it have launched
  bool launching_ = false;  // round_'s launch runs now (outside the lock)
  std::vector<const void*> payloads_;
  std::vector<char> present_;
  std::vector<std::thread::id> lastThread_;  // the thread each member last arrived from
  int arrived_ = 0;
  Outcome lastRound_;  // the latest launch's
  Outcome stop_;
};

// The group of (communicator id, device) in this process: made by its first member, the same
// object for the others while any member holds it. The members must name the same ranks;
// otherwise kInvalidUsage and *out stays null.
Status joinLaunchGroup(uint64_t commId, int device, const std::vector<int>& ranks, std::shared_ptr<LaunchGroup>* out);

}  // namespace collcomm::detail
