#include "common/team.h"

#include <algorithm>
#include <cstring>

#include "common/fail.h"

#if CC_PERF_HAVE_LAUNCH
#include "collcomm_launch.h"
#endif

namespace collcomm::perf {

Team::~Team() {
  if (control_ != nullptr) ccCommDestroy(control_);
}

void Team::init(const Options& opts) {
  layout_.nthreads = opts.nThreads;
#if CC_PERF_HAVE_LAUNCH
  ccLaunchInfo info{};
  if (ccLaunchDetect(&info) != ccSuccess) fatal("the launcher's environment is inconsistent (see the message above)");
  if (info.launched && info.size > 1) {
    layout_.nprocs = info.size;
    layout_.proc = info.rank;
    layout_.launcher = info.launcher;
    ccUniqueId id;
    const int wait = opts.timeoutSec > 0 ? opts.timeoutSec : 300;
    CC_PERF_CHECK(ccLaunchShareId(&info, &id, wait));
    ccConfig_t config = CC_CONFIG_INITIALIZER;
    config.commName = "perf-control";
    if (opts.timeoutSec > 0) config.timeout = opts.timeoutSec;
    CC_PERF_CHECK(ccCommInitRankConfig(&control_, layout_.nprocs, id, layout_.proc, &config));
  }
#endif
  const int n = layout_.nthreads;
  dslots_.assign(n, 0);
  islots_.assign(n, 0);
  vslots_.assign(n, nullptr);
  infoSlots_.assign(n, RankInfo{});
  if (control_ != nullptr) {
    // Every process must run the same number of threads, or ranks would not line up.
    double t[2] = {static_cast<double>(n), -static_cast<double>(n)};
    CC_PERF_CHECK(ccAllReduce(t, t, 2, ccFloat64, ccMax, control_, nullptr));
    if (t[0] != n || -t[1] != n) fatal("processes were started with different -t values (%g to %g)", -t[1], t[0]);
  }
}

ccUniqueId Team::shareDataId() {
  ccUniqueId id;
  memset(&id, 0, sizeof(id));
  if (layout_.proc == 0) CC_PERF_CHECK(ccGetUniqueId(&id));
  if (control_ != nullptr) CC_PERF_CHECK(ccBroadcast(&id, &id, sizeof(id), ccUint8, 0, control_, nullptr));
  return id;
}

template <class F>
void Team::exchange(int thread, F&& crossProcess) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t gen = generation_;
  if (++arrived_ == layout_.nthreads) cv_.notify_all();
  if (thread == 0) {
    cv_.wait(lock, [&] { return arrived_ == layout_.nthreads; });
    lock.unlock();
    crossProcess();
    lock.lock();
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return generation_ != gen; });
  }
}

void Team::barrier(int thread) {
  exchange(thread, [&] {
    if (control_ == nullptr) return;
    int64_t token = 0;
    CC_PERF_CHECK(ccAllReduce(&token, &token, 1, ccInt64, ccSum, control_, nullptr));
  });
}

double Team::combine(int thread, double v, TimeCombine how) {
  dslots_[thread] = v;
  exchange(thread, [&] {
    double r = dslots_[0];
    for (int t = 1; t < layout_.nthreads; ++t) {
      switch (how) {
        case TimeCombine::kMin:
          r = std::min(r, dslots_[t]);
          break;
        case TimeCombine::kMax:
          r = std::max(r, dslots_[t]);
          break;
        case TimeCombine::kAverage:
          r += dslots_[t];
          break;
        case TimeCombine::kRank0:
          break;
      }
    }
    if (control_ != nullptr) {
      if (how == TimeCombine::kRank0) {
        CC_PERF_CHECK(ccBroadcast(&r, &r, 1, ccFloat64, 0, control_, nullptr));
      } else {
        const ccRedOp_t op = how == TimeCombine::kMin ? ccMin : how == TimeCombine::kMax ? ccMax : ccSum;
        CC_PERF_CHECK(ccAllReduce(&r, &r, 1, ccFloat64, op, control_, nullptr));
      }
    }
    if (how == TimeCombine::kAverage) r /= layout_.nranks();
    dresult_ = r;
  });
  return dresult_;
}

int64_t Team::sum(int thread, int64_t v) {
  islots_[thread] = v;
  exchange(thread, [&] {
    int64_t r = 0;
    for (int t = 0; t < layout_.nthreads; ++t) r += islots_[t];
    if (control_ != nullptr) CC_PERF_CHECK(ccAllReduce(&r, &r, 1, ccInt64, ccSum, control_, nullptr));
    iresult_ = r;
  });
  return iresult_;
}

void Team::maxEach(int thread, std::vector<double>* v) {
  vslots_[thread] = v;
  exchange(thread, [&] {
    vresult_ = *vslots_[0];
    for (int t = 1; t < layout_.nthreads; ++t) {
      const std::vector<double>& o = *vslots_[t];
      for (size_t i = 0; i < vresult_.size() && i < o.size(); ++i) vresult_[i] = std::max(vresult_[i], o[i]);
    }
    if (control_ != nullptr && !vresult_.empty())
      CC_PERF_CHECK(
          ccAllReduce(vresult_.data(), vresult_.data(), vresult_.size(), ccFloat64, ccMax, control_, nullptr));
  });
  *v = vresult_;
}

std::vector<RankInfo> Team::gather(int thread, const RankInfo& mine) {
  infoSlots_[thread] = mine;
  exchange(thread, [&] {
    infoResult_.assign(layout_.nranks(), RankInfo{});
    if (control_ == nullptr) {
      std::copy(infoSlots_.begin(), infoSlots_.end(), infoResult_.begin());
    } else {
      const size_t bytes = sizeof(RankInfo) * layout_.nthreads;
      CC_PERF_CHECK(ccAllGather(infoSlots_.data(), infoResult_.data(), bytes, ccUint8, control_, nullptr));
    }
  });
  return infoResult_;
}

}  // namespace collcomm::perf
