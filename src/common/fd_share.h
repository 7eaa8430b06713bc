// Handing file descriptors to other processes of this host: how a GPU rank gives a peer process
// the memory of a FIFO it allocated (CUDA's cuMem* allocations export as a file descriptor, which
// only means something once the other process holds it).
//
// The offering process keeps a duplicate of each offered descriptor and serves it, on a thread of
// its own, over an abstract Unix socket (SCM_RIGHTS) to whoever presents the offer's ticket: its
// id and a random 128-bit key, which travel to the peer over the bootstrap, and only from a
// process of the same user (or root). The thread starts with the first offer and lives with the
// process. An abstract socket belongs to a network namespace: processes in different ones cannot
// reach each other this way (they count as different hosts when COLLCOMM_HOSTID says so).
#pragma once

#include <cstdint>

#include "common/deadline.h"
#include "common/status.h"

namespace collcomm::detail {

struct FdTicket {
  char socket[48];  // the abstract socket's name, without its leading NUL, NUL-terminated
  uint64_t id;
  uint64_t key[2];
  int32_t pid;  // the offering process (for sentences)
  int32_t pad;
};

// Offers a duplicate of `fd` (the caller keeps its own) until withdrawn.
Status offerFd(int fd, FdTicket* ticket);
// Withdraws an offer: later fetches of it fail; closes the duplicate. Unknown ids are ignored.
void withdrawFd(uint64_t id);
// Fetches the descriptor `ticket` names from the process that offered it, up to `deadline`: a new
// descriptor in this process, the caller's to close. `peerRank` names the offering rank in sentences.
Status fetchFd(const FdTicket& ticket, int peerRank, const Deadline& deadline, int* fd);

}  // namespace collcomm::detail
