// The proxy thread: one per process, moving data for transports that need a CPU beside the
// executor (NET: between the executor's FIFOs and the network).
//
// Clients register while connected and deregister before they go; the thread calls progress() on
// every client in turn. It polls (spinning, then yielding the core) while any operation of this
// process is running (ProxyActivity) or any client still has work in flight (hasWork), and sleeps
// on a condition variable otherwise, so an idle process burns no core. It starts with the first
// client and is told to end with the last (it is not waited for).
//
// Threading: progress()/hasWork() run on the proxy thread, or on a waiting executor's thread
// (proxyRoundHere), one round at a time under the proxy's lock, never at the same time as the
// client's deregistration, which waits for the current round to end. Setup tier: proxyAdd/Remove;
// control tier: ProxyActivity (an atomic, and a wake-up when the proxy sleeps).
#pragma once

#include <atomic>
#include <functional>

namespace collcomm::detail {

class ProxyClient {
 public:
  virtual ~ProxyClient() = default;
  // Makes whatever progress is possible without blocking; true if anything moved.
  virtual bool progress() = 0;
  // True while something must move even with no operation running (e.g. sends still queued).
  virtual bool hasWork() const = 0;
  // The sending half of progress(): hands the network what the executor published, reads
  // nothing; true if anything moved. Clients that send nothing keep the default.
  virtual bool progressSends() { return false; }
};

void proxyAdd(ProxyClient* client);
// Runs one progress round of every client on the calling thread, unless a round is under way
// (then returns false at once); true if it ran one. An executor waiting on a NET connection
// calls it instead of yielding its core to the proxy thread: where the two share a core, every
// hand-off between them was a context switch (four per message each way).
bool proxyRoundHere();
// The same with progressSends() instead of progress(): an executor calls it right after it
// publishes a large step to a proxied connection, so the step leaves while its lines are in this
// core's cache and the peer's wait ends sooner (loopback NET, 16 MiB out-of-place allreduce: 6%
// faster; docs/lab/2026-11-25.md, evening).
bool proxySendsHere();
// Returns once the proxy thread no longer touches `client`; waits for a round under way, never
// for the proxy thread itself.
void proxyRemove(ProxyClient* client);
// From a client's progress(): runs `work` on the same thread once the round has let go of the
// proxy's lock. For slow work that touches no client (closing a backend comm the client has let
// go of), which would otherwise hold up every proxyRemove, and so ccCommAbort, for its duration.
void proxyAfterRound(std::function<void()> work);

// Marks an operation of this process, and of the communicator whose count `commOps` is, as
// running for its scope.
class ProxyActivity {
 public:
  explicit ProxyActivity(std::atomic<int>* commOps);
  ~ProxyActivity();
  ProxyActivity(const ProxyActivity&) = delete;
  ProxyActivity& operator=(const ProxyActivity&) = delete;

 private:
  std::atomic<int>* commOps_;
};

}  // namespace collcomm::detail
