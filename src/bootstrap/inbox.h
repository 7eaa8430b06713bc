// The receiving side of one rank's bootstrap: owns the rank's listener and every connection other
// ranks open to it, and keeps the messages they carry until asked for.
//
// Listener dispatch: every connection starts with a wire::HelloMsg {magic, secret, srcRank, kind}.
// A kRing hello from rank-1 becomes the ring's receive socket (handed out by takeRing); a kP2p hello
// makes the connection a stream of {tag, bytes, payload} messages from srcRank, queued per (peer,
// tag) in arrival order. A wrong magic or secret, an unexpected ring hello, or a connection silent
// for wire::kHelloTimeoutMs is closed (logged at INFO) without disturbing anything else.
//
// Connections are only read inside poll(), which the owning Bootstrap calls from every wait (send,
// recv, allGather, init), so a rank blocked sending to a busy peer still drains what others send
// to it. Not thread-safe: used by the Bootstrap's one control thread.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

namespace collcomm::detail {

class Inbox {
 public:
  Inbox(Socket listener, const uint64_t secret[2], int rank, int nranks);

  // Waits up to timeoutMs for incoming activity or for any of the caller's `extra` fds (their
  // revents are filled in), then reads whatever incoming data is ready.
  void poll(pollfd* extra, size_t nExtra, int timeoutMs);
  // Moves the oldest queued message from `peer` with `tag` into *out; false if there is none.
  bool take(int peer, uint64_t tag, std::vector<char>* out);
  // A message to self: queued as if it came from this rank.
  void deliverLocal(uint64_t tag, const void* data, size_t size);
  // True when `peer` had connected to us and no connection from it is open any more; *why says
  // how the last one ended ("" for a plain close). Queued messages from it stay available.
  bool peerGone(int peer, std::string* why) const;
  // The ring connection from rank-1 once it has arrived (an invalid Socket before). Once only.
  Socket takeRing();

 private:
  struct Conn {
    Socket sock;
    SocketAddress from;
    std::chrono::steady_clock::time_point acceptedAt;
    int src = -1;  // set by a valid p2p hello
    wire::HelloMsg hello{};
    size_t helloGot = 0;
    wire::MsgHeader header{};
    size_t headerGot = 0;
    bool inPayload = false;
    std::vector<char> payload;
    size_t payloadGot = 0;
  };

  void acceptPending();
  void readFrom(Conn& c);
  // Returns false (and closes c) if the hello is not acceptable.
  bool onHello(Conn& c);
  void reject(Conn& c, const char* why);
  void lost(Conn& c, const std::string& why);

  Socket listener_;
  uint64_t secret_[2];
  int rank_;
  int nranks_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<pollfd> fds_;
  std::map<std::pair<int, uint64_t>, std::deque<std::vector<char>>> queues_;
  std::vector<int> openFrom_;         // identified open connections per peer
  std::vector<char> gone_;            // per peer: its last connection ended (and none is open)
  std::vector<std::string> goneWhy_;  // how it ended ("" for a plain close)
  Socket ring_;
  bool ringSeen_ = false;
};

}  // namespace collcomm::detail
