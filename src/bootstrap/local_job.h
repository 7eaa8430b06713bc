// What the ranks of one job that live in this process share: one listener and one connection per
// other process of the job (never one per rank), a mailbox per local rank, and the allgather
// rounds. A message between two ranks of this process is a copy into the receiver's mailbox; a
// message to another process goes over this process's connection to it and is filed into the
// receiver's mailbox there. An allgather gathers the local ranks' slots in memory; the lowest local
// rank (the process's leader) then passes whole process blocks around the ring of processes'
// leaders. So a process holds O(processes) descriptors whatever its number of ranks, and a job whose
// ranks all live in one process holds none after init.
//
// Threads: none of its own. Any number of local ranks call in at once (one mutex guards the
// mailboxes and rounds; a condition variable per rank wakes exactly the rank a message is for). When
// the job spans processes, one waiting rank at a time polls the sockets for the whole process and
// files what arrives; when it stops waiting it hands that role to another waiting rank. Every wait
// is in slices of at most kAbortPollMs and ends at its deadline, on the rank's abort flag, or when
// the awaited rank is gone (a local rank's Bootstrap destroyed, or every connection from a remote
// rank's process closed), with a sentence naming the rank and its host.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/inbox.h"
#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

namespace collcomm::detail {

// One rank's entry in the root's table.
struct Peer {
  SocketAddress addr;  // its process's listener (the same for every rank of that process)
  std::string host;
};

class LocalJob {
 public:
  // The LocalJob of the job `id` in this process that ranks are still joining, or a new one
  // listening on loopback (a loopback root) or the selected interface (rank: for the sentence).
  static Status acquire(const UniqueIdData& id, const SocketAddress& root, int rank, std::shared_ptr<LocalJob>* out);
  LocalJob(std::string key, const uint64_t secret[2], Socket listener, const SocketAddress& bound);
  ~LocalJob();
  LocalJob(const LocalJob&) = delete;
  LocalJob& operator=(const LocalJob&) = delete;

  // The address every local rank registers with the root.
  const SocketAddress& address() const { return bound_; }
  // After the root's answer: `rank` joins with the job's table (the first local rank sets it up).
  Status attach(int rank, std::vector<Peer> table);
  // `rank`'s Bootstrap is gone: waits for it end with a sentence, here and (best effort, over the
  // connections this process has open) in the other processes.
  void detach(int rank);
  // Wakes `rank` so its wait sees its abort flag promptly.
  void wake(int rank);

  const std::string& hostName(int rank) const { return table_[rank].host; }

  // The Bootstrap operations of local rank `self` (see bootstrap.h); `abort` is its abort flag.
  Status send(int self, int peer, uint64_t tag, const void* data, size_t size, Deadline deadline,
              const std::atomic<bool>& abort);
  Status recv(int self, int peer, uint64_t tag, void* data, size_t size, Deadline deadline,
              const std::atomic<bool>& abort);
  Status allGather(int self, void* data, size_t bytesPerRank, Deadline deadline, const std::atomic<bool>& abort);

 private:
  using QueueKey = std::tuple<uint32_t, int, uint64_t>;  // channel, source rank, tag
  struct Mailbox {
    std::map<QueueKey, std::deque<std::vector<char>>> queues;
    std::condition_variable cv;
    bool attached = false;
    bool gone = false;
    bool waiting = false;    // in a condition-variable wait (may take over polling)
    uint64_t gatherSeq = 0;  // allgathers this rank has entered
  };
  struct Round {
    size_t bytes = 0;
    std::vector<char> buf;
    int arrived = 0;
    int readers = 0;  // local ranks that have not left the round yet
    bool done = false;
    Status status = kOk;
    std::string error;  // the leader's sentence when status is not kOk
  };
  struct OutLink {
    bool busy = false;         // under mu_: a sender is writing a message (one at a time)
    std::vector<int> waiting;  // under mu_: local ranks waiting for it to be free
    Socket sock;               // used by the sender that set busy
  };

  std::string who(int rank) const;
  Status ioFailure(int self, const IoStatus& s, int peer, const std::string& op, const char* dir) const;
  // Under mu_: wakes `rank`'s waits (and the poll, when it is the poller).
  void wakeLocked(int rank);
  // Under mu_: true when `peer` can send nothing more; *why says how it left.
  bool goneLocked(int peer, std::string* why) const;
  Status goneError(int self, int peer, const std::string& op) const;
  // One wait slice with mu_ held by `lock`: polls the process's sockets (and `extra`) when the
  // job spans processes and nobody else does, else waits for this rank's wake-up (or on `extra`).
  void waitSlice(std::unique_lock<std::mutex>& lock, int self, pollfd* extra, int sliceMs);
  void fileLocked(Inbox::Events& ev);
  // Waits with mu_ held until ready(); failed() may end the wait with its own status.
  template <class Ready, class Failed, class TimedOut>
  Status waitLocked(std::unique_lock<std::mutex>& lock, int self, const std::atomic<bool>& abort, Deadline deadline,
                    const std::string& op, Ready ready, Failed failed, TimedOut timedOut);
  Status sendRemote(int self, int peer, wire::Channel channel, uint64_t tag, const void* data, size_t size,
                    Deadline deadline, const std::atomic<bool>& abort, const std::string& op);
  Status take(int self, int peer, wire::Channel channel, uint64_t tag, std::vector<char>* out, Deadline deadline,
              const std::atomic<bool>& abort, const std::string& op);
  // The leader's part of an allgather when the job spans processes: the ring of process blocks.
  Status exchangeBlocks(int self, Round& round, uint64_t seq, Deadline deadline, const std::atomic<bool>& abort);
  void unregister();

  const std::string key_;
  uint64_t secret_[2];
  const SocketAddress bound_;
  Socket listener_;  // until attach hands it to inbox_ (or closes it: a one-process job)

  std::mutex mu_;
  bool tableSet_ = false;
  int nranks_ = 0;
  std::vector<Peer> table_;
  std::vector<int> procOf_;                  // process index of each rank
  std::vector<std::vector<int>> procRanks_;  // ranks of each process, ascending
  int selfProc_ = -1;
  int leader_ = -1;  // lowest local rank
  int attached_ = 0;
  std::vector<std::unique_ptr<Mailbox>> mail_;  // per rank; only local ranks have one
  std::map<uint64_t, Round> rounds_;

  // Only when the job spans processes.
  std::unique_ptr<Inbox> inbox_;  // used by the poller only
  Socket wakeFd_;                 // an eventfd that ends the poller's poll early
  bool polling_ = false;
  int pollerRank_ = -1;
  std::vector<char> rankLeft_;  // per rank of another process: it said it left the job
  std::vector<int> openFrom_;   // per process: identified connections from it that are open
  std::vector<char> procGone_;  // per process: its last connection to us ended
  std::vector<std::string> procGoneWhy_;
  std::vector<std::unique_ptr<OutLink>> out_;  // per process
};

}  // namespace collcomm::detail
