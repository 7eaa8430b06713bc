// Wire formats of the bootstrap's TCP connections: rank -> root registration and the root's
// answer, and the process -> process hello and message framing (one connection carries the
// messages of every rank of one process to ranks of another). All ranks of a job run the same build on
// the same architecture, so structs travel as they are in memory (host byte order).
#pragma once

#include <cstdint>
#include <cstring>

namespace collcomm::detail::wire {

inline constexpr uint32_t kMagic = 0x43434253;  // "CCBS"
inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kHostNameBytes = 64;
// Largest rank-to-rank control message; a bigger header means a corrupted stream.
inline constexpr uint64_t kMaxMessageBytes = 1ull << 30;
// Longest error sentence the root sends.
inline constexpr uint64_t kMaxReplyText = 4096;
// How long a new connection may stay silent before its first message (root and rank listeners).
inline constexpr int kHelloTimeoutMs = 3000;

// One rank's entry in the address table.
struct PeerEntry {
  uint8_t addr[28];  // sockaddr_in or sockaddr_in6 of the listener of the rank's process (per job)
  uint32_t addrLen;
  char host[kHostNameBytes];  // NUL-terminated
  int32_t pid;
  uint32_t reserved;
};

// rank -> root: the only message a rank sends on its root connection.
struct RegisterMsg {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  int32_t rank;
  int32_t nranks;
  // How long the rank will wait for the answer; the root answers (with a timeout error if the
  // table is not complete) a little before that, so the rank learns which ranks are missing.
  int64_t waitMs;
  PeerEntry self;
};

// root -> rank: status 0 is followed by nranks PeerEntry; any other status (a Status value) by
// `bytes` characters of the sentence the rank reports.
struct ReplyHeader {
  uint32_t magic;
  int32_t status;
  uint64_t bytes;
};

// process -> process: first message on every connection between the processes of a job. srcRank
// is any rank of the connecting process (it names the process through the address table).
struct HelloMsg {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  int32_t srcRank;
  uint32_t reserved;
};

// Which queue a message joins: the user's tagged messages, or the allgather among processes;
// kLeft (no payload) says that rank src left the job (its Bootstrap was destroyed).
enum class Channel : uint32_t { kUser = 0, kGather = 1, kLeft = 2 };

// process -> process: before each message's payload.
struct MsgHeader {
  int32_t src;
  int32_t dst;
  uint32_t channel;  // Channel
  uint32_t reserved;
  uint64_t tag;
  uint64_t bytes;
};

// Constant-time comparison (the secret is the only authentication there is).
inline bool sameSecret(const uint64_t a[2], const uint64_t b[2]) { return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0; }

}  // namespace collcomm::detail::wire
