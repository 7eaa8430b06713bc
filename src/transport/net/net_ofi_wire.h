// What travels between two OFI endpoints, and the tag layout that keeps connections and control
// messages apart (net_ofi.cc tells how a connection works). Structs travel as they are in memory
// (host byte order), as the socket backend's do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/net/net.h"

namespace collcomm::detail::netofi {

inline constexpr uint32_t kHandleMagic = 0x43434f48;  // "CCOH"
inline constexpr uint32_t kHelloMagic = 0x43434f4c;   // "CCOL"
inline constexpr uint32_t kCtrlMagic = 0x43434f43;    // "CCOC"
inline constexpr uint32_t kWireVersion = 1;
inline constexpr size_t kMaxNameBytes = 112;  // an endpoint's address (fi_getname) as the handle carries it

// Tags (64 bits): bit 63 marks a control message; bits 32..62 are the connection's key (random,
// chosen by the connecting side, never 0; 0 is the hello's); bits 0..31 carry the caller's tag, or
// for control messages kCtrlTagKind. Every receive matches all 64 bits, so a message of one
// connection, or a control message, never lands in another's receive.
inline constexpr uint64_t kCtrlBit = uint64_t{1} << 63;
inline constexpr uint32_t kKeyMask = 0x7fffffffu;
inline constexpr uint64_t kHelloTag = kCtrlBit;
inline constexpr uint32_t kCtrlTagKind = 1;
inline uint64_t dataTag(uint32_t key, uint32_t tag) { return (uint64_t{key & kKeyMask} << 32) | tag; }
inline uint64_t ctrlTag(uint32_t key) { return kCtrlBit | (uint64_t{key & kKeyMask} << 32) | kCtrlTagKind; }

// The connecting side's first message, to the listener's endpoint.
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  uint32_t key;
  uint32_t nameLen;
  uint8_t name[kMaxNameBytes];  // the connecting endpoint's address, for the listener's replies
};

// Control messages after the hello, both ways on ctrlTag(key).
enum class CtrlKind : uint32_t {
  kFarewell = 1,  // receiver to sender, before it closes: word is the caller's farewell word
  kGoodbye = 2,   // either side, as it closes its end
  kProbe = 3,     // either side, now and then while it waits: its send fails once the peer is gone
};

struct CtrlMsg {
  uint32_t magic;
  CtrlKind kind;
  uint32_t word;
  uint32_t reserved;
};

struct ConnectState;

struct Handle {
  uint32_t magic;
  uint16_t nameLen;
  uint16_t reserved;
  ConnectState* pending;        // the connecting side's handshake in progress (its own copy only)
  uint8_t name[kMaxNameBytes];  // the listener's endpoint address
};
static_assert(sizeof(Handle) <= kNetHandleBytes);

}  // namespace collcomm::detail::netofi
