// Bootstrap: how the ranks of one communicator find each other and exchange small control
// messages before (and beside) the data transports.
//
// ccGetUniqueId -> createUniqueId(): starts a root service thread in this process listening on a
// TCP socket; the id carries the root's address and a random 128-bit secret. Every rank calls
// Bootstrap::init with the id: it joins the LocalJob of its process (local_job.h: one listener per
// process and job, made by the first local rank), registers (rank, nranks, that listener's address,
// host name, secret) with the root, and receives everyone's addresses; ranks with the same address
// share a process. Ranks of one process exchange messages in memory; processes over one
// connection per pair that talks, opened on first use. Every connection, to the root or between
// processes, first presents the secret; a connection that does not is closed without disturbing
// the job. Descriptors: during init two per rank (its registration and the root's end of it);
// after init one listener and one eventfd per process and job spanning processes (none for a job
// within one process), plus one socket per remote process it exchanged messages with.
//
// Threading: a Bootstrap is used by one thread at a time (the communicator's control path), except
// abort(), interrupt() and resume(), which any thread may call to make blocked calls return promptly.
// Every call blocks at most until its deadline, then returns Status::kTimeout with a sentence
// naming the peer rank and host it was waiting for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collcomm.h"
#include "common/deadline.h"
#include "common/status.h"

namespace collcomm::detail {

// What ccUniqueId carries (fits in CC_UNIQUE_ID_BYTES).
struct UniqueIdData {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  // The root's address: a struct sockaddr_in or sockaddr_in6, in network order.
  uint8_t rootAddr[28];
  uint32_t rootAddrLen;
};
static_assert(sizeof(UniqueIdData) <= CC_UNIQUE_ID_BYTES);

// Makes an id and starts the root service (a detached thread that lives until nranks ranks have
// registered and received the address table, or COLLCOMM_TIMEOUT passes). With COLLCOMM_COMM_ID
// set, encodes that address and a secret derived from it, and starts no service here (the rank
// whose host owns that address starts it in Bootstrap::init).
Status createUniqueId(UniqueIdData* out);
// The same with a random secret and a root service here, whatever COLLCOMM_COMM_ID says: for ids
// made inside a job (ccCommSplit), which must differ from the job's own (another root, another
// secret that the new communicator's NET connections present).
Status createRandomUniqueId(UniqueIdData* out);
Status decodeUniqueId(const ccUniqueId& id, UniqueIdData* out);
void encodeUniqueId(const UniqueIdData& data, ccUniqueId* id);

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  // Joins the job described by `id` as `rank` of `nranks`. Fails with a clear sentence on a
  // mismatched nranks, a duplicate rank, a wrong secret, or the deadline.
  static Status init(const UniqueIdData& id, int rank, int nranks, Deadline deadline,
                     std::unique_ptr<Bootstrap>* out);

  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // Host name each rank registered with (for error messages and logs).
  virtual const std::string& hostName(int rank) const = 0;

  // In place: `data` holds nranks slots of `bytesPerRank`; this rank's slot is filled on entry,
  // all slots on return. Gathered in memory within a process, then around the ring of processes.
  virtual Status allGather(void* data, size_t bytesPerRank, Deadline deadline) = 0;
  // Returns when every rank has entered.
  virtual Status barrier(Deadline deadline) = 0;
  // Point-to-point control message to/from any rank (including self). Messages between a pair
  // with the same tag arrive in order; messages with other tags or from other peers that arrive
  // first are kept until asked for. recv fails if the message's size differs from `size`.
  virtual Status send(int peer, uint64_t tag, const void* data, size_t size, Deadline deadline) = 0;
  virtual Status recv(int peer, uint64_t tag, void* data, size_t size, Deadline deadline) = 0;

  // Any thread: blocked and later calls return Status::kRemoteError ("aborted") promptly.
  virtual void abort() = 0;
  // Any thread: the calls blocked now, and those made until resume(), return Status::kRemoteError
  // promptly; after resume() calls work as before (ccCommShrink stops an operation stuck in a setup
  // exchange, waits for it to leave, then uses the bootstrap itself).
  virtual void interrupt() = 0;
  virtual void resume() = 0;
};

}  // namespace collcomm::detail
