// Wire format of the socket backend's connections: the handle a listener publishes, the hello
// every socket of a connection opens with, the header in front of every message, the farewell, and
// the framing limits both ends must agree on (net_socket.cc tells how a message travels). Structs
// travel as they are in memory (host byte order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/net/net.h"

namespace collcomm::detail::netsocket {

inline constexpr uint32_t kHelloMagic = 0x43434e54;   // "CCNT"
inline constexpr uint32_t kHandleMagic = 0x43434e48;  // "CCNH"
inline constexpr uint32_t kWireVersion = 1;
inline constexpr uint32_t kFarewellMagic = 0x43434642;  // "CCFB"
inline constexpr size_t kInlineBytes = 64 << 10;
inline constexpr int kMaxThreads = 16;
inline constexpr int kMaxSocks = 64;

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  uint64_t nonce;
  uint32_t index;  // 0: control socket; 1..nSocks: data socket index+1
  uint16_t nThreads;
  uint16_t nSocksPerThread;
};

struct MsgHeader {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};

struct ConnectState;

struct Handle {
  uint32_t magic;
  uint32_t addrLen;
  uint8_t addr[28];
  ConnectState* pending;  // the connecting side's handshake in progress (its own copy only)
};
static_assert(sizeof(Handle) <= kNetHandleBytes);

}  // namespace collcomm::detail::netsocket
