// The proxy's side of a teardown (ccCommAbort frees a communicator's NET connections, each one
// leaving the proxy with proxyRemove): slow work a round hands over with proxyAfterRound (a
// backend close, with its bounded goodbye wait and fi_close) runs outside the proxy's lock, so a
// proxyRemove never waits for it, and the last proxyRemove does not wait for the proxy thread.
// Under load each wait for another thread cost a scheduling delay (0.2 s at a time in CI's loaded
// sanitizer stage), and an abort that waited on several overran its bound.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

#include "proxy/proxy.h"
#include "support/watchdog.h"

namespace collcomm::test {
namespace {

using detail::ProxyClient;

// A client whose first progress() hands the proxy a piece of work that blocks until the test
// releases it, after saying it started. The work owns what it touches (it may end after the test).
class BlockingCloseClient : public ProxyClient {
 public:
  bool progress() override {
    if (handed_.exchange(true)) return false;
    detail::proxyAfterRound([s = signals_] {
      s->started.set_value();
      s->released.wait();
    });
    return true;
  }
  bool hasWork() const override { return !handed_.load(); }

  std::future<void> started() { return signals_->started.get_future(); }
  void release() { signals_->release.set_value(); }

 private:
  struct Signals {
    std::promise<void> started;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
  };
  std::atomic<bool> handed_{false};
  std::shared_ptr<Signals> signals_ = std::make_shared<Signals>();
};

// Every wait below is bounded only so that a regression fails instead of hanging; a pass never
// depends on how long anything takes.
constexpr auto kBound = std::chrono::seconds(20);

TEST(ProxyTeardown, RemovingTheLastClientWaitsNeitherForDeferredWorkNorForTheThread) {
  Watchdog dog(60, "ProxyTeardown.RemovingTheLastClientWaitsNeitherForDeferredWorkNorForTheThread");
  BlockingCloseClient client;
  std::future<void> started = client.started();
  detail::proxyAdd(&client);
  // The proxy thread's first round hands over the work; the thread then runs it, outside the lock.
  ASSERT_EQ(started.wait_for(kBound), std::future_status::ready) << "the proxy thread never ran a round";
  std::future<void> removed = std::async(std::launch::async, [&client] { detail::proxyRemove(&client); });
  const bool returned = removed.wait_for(kBound) == std::future_status::ready;
  client.release();  // whatever happened, so that nothing is left blocked
  removed.wait();
  EXPECT_TRUE(returned) << "proxyRemove waited for work a round deferred, or for the proxy thread to end";
}

}  // namespace
}  // namespace collcomm::test
