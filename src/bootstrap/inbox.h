// The receiving side of one process's part of a job: owns the process's listener and every
// connection other processes of the job open to it, and turns what they carry into messages.
//
// Every connection starts with a wire::HelloMsg {magic, version, secret, srcRank}; srcRank names
// the connecting process through the address table. Then it is a stream of {src, dst, channel,
// tag, bytes, payload} messages from ranks of that process to ranks of this one. A wrong magic or
// secret, a rank of this process or out of range, a message whose src or dst does not fit the
// connection, or a connection silent for wire::kHelloTimeoutMs is closed (logged at INFO) without
// disturbing anything else.
//
// Not thread-safe: used by whichever thread currently polls for the process (LocalJob hands that
// role to one waiting rank at a time). It takes no locks and keeps no queues: poll() returns what
// arrived, the caller files it.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

namespace collcomm::detail {

class Inbox {
 public:
  // How long the listener rests after accept failed (out of descriptors).
  static constexpr int kAcceptPauseMs = 20;

  struct Message {
    int src;
    int dst;
    wire::Channel channel;
    uint64_t tag;
    std::vector<char> payload;
  };
  // What one poll() saw: complete messages, and connections from a process opened or lost.
  struct Events {
    std::vector<Message> messages;
    std::vector<int> opened;                        // process index, once per identified connection
    std::vector<std::pair<int, std::string>> lost;  // process index, how it ended ("" for a close)
  };

  // procOf[rank]: the process index of each rank (from the address table); selfProc: this one's.
  Inbox(Socket listener, const uint64_t secret[2], std::vector<int> procOf, int selfProc);

  // Waits up to timeoutMs for incoming activity or for any of the caller's `extra` fds (their
  // revents are filled in), then reads whatever incoming data is ready into *ev.
  void poll(pollfd* extra, size_t nExtra, int timeoutMs, Events* ev);

 private:
  struct Conn {
    Socket sock;
    SocketAddress from;
    std::chrono::steady_clock::time_point acceptedAt;
    int proc = -1;  // set by a valid hello
    wire::HelloMsg hello{};
    size_t helloGot = 0;
    wire::MsgHeader header{};
    size_t headerGot = 0;
    bool inPayload = false;
    std::vector<char> payload;
    size_t payloadGot = 0;
  };

  void acceptPending();
  void readFrom(Conn& c, Events* ev);
  // Returns false (and closes c) if the hello is not acceptable.
  bool onHello(Conn& c, Events* ev);
  // Why the header cannot be accepted on this connection, or nullptr.
  const char* badHeader(const Conn& c) const;
  void reject(Conn& c, const char* why);
  void lost(Conn& c, const std::string& why, Events* ev);

  Socket listener_;
  uint64_t secret_[2];
  std::vector<int> procOf_;
  int selfProc_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<pollfd> fds_;
  std::chrono::steady_clock::time_point acceptPausedUntil_{};
};

}  // namespace collcomm::detail
