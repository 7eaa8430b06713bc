// Unique-id helpers shared by unique_id.cc and bootstrap.cc (not part of the bootstrap interface).
#pragma once

#include <cstdint>
#include <string>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"

namespace collcomm::detail {

// The secret of a COLLCOMM_COMM_ID job, derived from the variable's value (see the trade-off there).
void fixedIdSecret(const std::string& commId, uint64_t secret[2]);
// Reads COLLCOMM_COMM_ID: *text is "" when unset; otherwise *addr is its parsed address.
Status parseCommIdParam(std::string* text, SocketAddress* addr);
// Magic, version and address are well formed.
bool uniqueIdLooksValid(const UniqueIdData& id);
bool rootAddressOf(const UniqueIdData& id, SocketAddress* out);

}  // namespace collcomm::detail
