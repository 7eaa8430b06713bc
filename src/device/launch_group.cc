#include "device/launch_group.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

namespace collcomm::detail {
namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

LaunchGroup::LaunchGroup(std::vector<int> ranks, int device)
    : ranks_(std::move(ranks)),
      device_(device),
      payloads_(ranks_.size(), nullptr),
      present_(ranks_.size(), 0),
      lastThread_(ranks_.size()) {}

int LaunchGroup::arrivedThisRound() const {
  std::lock_guard<std::mutex> lock(mu_);
  return arrived_;
}

uint64_t LaunchGroup::roundsLaunched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return round_;
}

Status LaunchGroup::fail(const Outcome& outcome) {
  setThreadLastError(outcome.sentence);
  return outcome.code;
}

// Whether `arrivals` may join the round being gathered; the sentence is this thread's.
Status LaunchGroup::refuseLocked(std::span<const Arrival> arrivals) const {
  if (stop_.code != kOk)
    return CC_ERROR(stop_.code, "the ranks sharing CUDA device %d (%s) stopped launching together: %s", device_,
                    rankList(ranks_).c_str(), stop_.sentence.c_str());
  if (arrivals.empty())
    return CC_ERROR(Status::kInvalidUsage, "a launch round on CUDA device %d was joined with no member", device_);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const int m = arrivals[i].member;
    if (m < 0 || m >= members())
      return CC_ERROR(Status::kInvalidUsage,
                      "member %d of the launch group on CUDA device %d does not exist (%d members)", m, device_,
                      members());
    bool twice = present_[m] != 0;
    for (size_t j = 0; j < i; ++j) twice = twice || arrivals[j].member == m;
    if (twice)
      return CC_ERROR(Status::kInvalidUsage,
                      "rank %d called a second operation before the ranks sharing CUDA device %d with it (%s) had all "
                      "called its first: a communicator's operations must come from one thread at a time",
                      ranks_[m], device_, rankList(ranks_).c_str());
  }
  return kOk;
}

std::string LaunchGroup::missingRanksLocked() const {
  std::vector<int> missing;
  for (int m = 0; m < members(); ++m)
    if (present_[m] == 0) missing.push_back(ranks_[m]);
  return rankList(missing);
}

// A thread that drives several members one call at a time waits for itself: say so where the
// members it waits for last came from this thread.
std::string LaunchGroup::sameThreadHintLocked() const {
  const std::thread::id self = std::this_thread::get_id();
  for (int m = 0; m < members(); ++m)
    if (present_[m] == 0 && lastThread_[m] == self)
      return " (rank " + std::to_string(ranks_[m]) +
             "'s last operation came from this thread, which now waits for itself: a thread that drives several "
             "ranks sharing a GPU calls their operations between ccGroupStart and ccGroupEnd)";
  return "";
}

Status LaunchGroup::runRound(std::unique_lock<std::mutex>& lock, const Launch& launch) {
  launching_ = true;
  const std::vector<const void*> payloads = payloads_;
  lock.unlock();
  const Status s = launch(std::span<const void* const>(payloads));
  const std::string sentence = isOk(s) ? std::string() : threadLastError();
  lock.lock();
  launching_ = false;
  lastRound_ = Outcome{s, sentence};
  std::fill(present_.begin(), present_.end(), 0);
  std::fill(payloads_.begin(), payloads_.end(), nullptr);
  arrived_ = 0;
  ++round_;
  roundDone_.notify_all();
  return s;
}

Status LaunchGroup::arrive(std::span<const Arrival> arrivals, const Launch& launch, Deadline deadline) {
  const auto began = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  CC_CHECK(refuseLocked(arrivals));
  for (const Arrival& a : arrivals) {
    present_[a.member] = 1;
    payloads_[a.member] = a.payload;
    lastThread_[a.member] = std::this_thread::get_id();
  }
  arrived_ += static_cast<int>(arrivals.size());
  const uint64_t mine = round_;
  if (arrived_ == members()) return runRound(lock, launch);
  for (;;) {
    if (round_ > mine) return isOk(lastRound_.code) ? kOk : fail(lastRound_);
    if (launching_) {  // bounded: the launch only enqueues
      roundDone_.wait(lock);
      continue;
    }
    if (stop_.code != kOk) return fail(stop_);
    if (deadline.expired()) {
      std::vector<int> waiting;
      for (const Arrival& a : arrivals) waiting.push_back(ranks_[a.member]);
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      const std::string missing = missingRanksLocked();
      const std::string hint = sameThreadHintLocked();
      const Status s = CC_ERROR(Status::kTimeout,
                                "rank(s) %s waited %.1f s at operation %llu for rank(s) %s, which share CUDA device %d "
                                "with them in this process and launch with them as one kernel%s",
                                rankList(waiting).c_str(), waited, static_cast<unsigned long long>(mine + 1),
                                missing.c_str(), device_, hint.c_str());
      stop_ = Outcome{s, threadLastError()};
      roundDone_.notify_all();
      return s;
    }
    if (deadline.at() == Deadline::Clock::time_point::max())
      roundDone_.wait(lock);
    else
      roundDone_.wait_until(lock, deadline.at());
  }
}

void LaunchGroup::abort(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_.code == kOk)
    stop_ = Outcome{Status::kRemoteError, "rank " + std::to_string(rank) + "'s communicator was aborted while ranks " +
                                              rankList(ranks_) + " waited to launch together on CUDA device " +
                                              std::to_string(device_)};
  roundDone_.notify_all();
}

Status joinLaunchGroup(uint64_t commId, int device, const std::vector<int>& ranks, std::shared_ptr<LaunchGroup>* out) {
  static std::mutex mu;
  static std::map<std::pair<uint64_t, int>, std::weak_ptr<LaunchGroup>> groups;
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = groups.begin(); it != groups.end();) it = it->second.expired() ? groups.erase(it) : std::next(it);
  std::weak_ptr<LaunchGroup>& slot = groups[{commId, device}];
  std::shared_ptr<LaunchGroup> group = slot.lock();
  if (group == nullptr) {
    group = std::make_shared<LaunchGroup>(ranks, device);
    slot = group;
  } else if (group->ranks() != ranks) {
    return CC_ERROR(Status::kInvalidUsage,
                    "the ranks of communicator %016llx on CUDA device %d disagree on who shares it: ranks %s against "
                    "%s",
                    static_cast<unsigned long long>(commId), device, rankList(ranks).c_str(),
                    rankList(group->ranks()).c_str());
  }
  *out = std::move(group);
  return kOk;
}

}  // namespace collcomm::detail
