// ccUniqueId: making one (random secret + a root service on this host, or the fixed
// COLLCOMM_COMM_ID address), and its byte encoding.
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/root_service.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id_internal.h"
#include "common/log.h"
#include "common/params.h"

namespace collcomm::detail {
namespace {

constexpr uint32_t kIdMagic = 0x43434944;  // "CCID"
constexpr uint32_t kIdVersion = 1;

Status randomSecret(uint64_t secret[2]) {
  size_t got = 0;
  char* p = reinterpret_cast<char*>(secret);
  while (got < 2 * sizeof(uint64_t)) {
    ssize_t n = getrandom(p + got, 2 * sizeof(uint64_t) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return CC_ERROR(Status::kSystemError, "ccGetUniqueId: getrandom failed: %s", strerror(errno));
    got += static_cast<size_t>(n);
  }
  return kOk;
}

uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fillAddress(const SocketAddress& addr, UniqueIdData* out) {
  memset(out->rootAddr, 0, sizeof(out->rootAddr));
  memcpy(out->rootAddr, addr.sa(), addr.len());
  out->rootAddrLen = addr.len();
}

}  // namespace

void fixedIdSecret(const std::string& commId, uint64_t secret[2]) {
  // The secret of a COLLCOMM_COMM_ID job is derived from the string every rank already shares, so
  // it is only as secret as that string: it keeps stray connections and other jobs (with another
  // COLLCOMM_COMM_ID) out, but anyone who knows the variable's value can join. Use ccGetUniqueId's
  // random secret where that matters.
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (unsigned char c : commId) {
    h1 = (h1 ^ c) * 0x100000001b3ull;
    h2 = (h2 ^ c) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  }
  secret[0] = mix64(h1);
  secret[1] = mix64(h2 ^ secret[0]);
}

Status parseCommIdParam(std::string* text, SocketAddress* addr) {
  *text = paramStr(Param::kCommId);
  if (text->empty()) return kOk;
  std::string why;
  if (!SocketAddress::parse(*text, socketFamilyParam(), addr, &why))
    return CC_ERROR(Status::kInvalidArgument, "COLLCOMM_COMM_ID=\"%s\" is not a usable <host>:<port>: %s",
                    text->c_str(), why.c_str());
  return kOk;
}

Status createUniqueId(UniqueIdData* out) {
  UniqueIdData id{};
  id.magic = kIdMagic;
  id.version = kIdVersion;
  std::string commId;
  SocketAddress fixed;
  CC_CHECK(parseCommIdParam(&commId, &fixed));
  if (!commId.empty()) {
    fixedIdSecret(commId, id.secret);
    fillAddress(fixed, &id);
    CC_INFO(kSubsysBootstrap, "unique id from COLLCOMM_COMM_ID=%s (root %s)", commId.c_str(), fixed.toString().c_str());
    *out = id;
    return kOk;
  }
  return createRandomUniqueId(out);
}

Status createRandomUniqueId(UniqueIdData* out) {
  UniqueIdData id{};
  id.magic = kIdMagic;
  id.version = kIdVersion;
  CC_CHECK(randomSecret(id.secret));
  std::vector<NetInterface> ifs;
  CC_CHECK(findInterfaces(1, &ifs));
  Socket listener;
  SocketAddress bound;
  IoStatus s = Socket::listen(ifs[0].addr, &listener, &bound);
  if (!s.ok())
    return CC_ERROR(Status::kSystemError, "ccGetUniqueId: cannot listen on interface %s (%s): %s", ifs[0].name.c_str(),
                    ifs[0].addr.hostString().c_str(), s.describe().c_str());
  fillAddress(bound, &id);
  CC_CHECK(startRootService(std::move(listener), bound, id.secret, static_cast<double>(paramInt(Param::kTimeout))));
  *out = id;
  return kOk;
}

bool rootAddressOf(const UniqueIdData& id, SocketAddress* out) {
  return id.rootAddrLen <= sizeof(id.rootAddr) && SocketAddress::fromSockaddr(id.rootAddr, id.rootAddrLen, out);
}

bool uniqueIdLooksValid(const UniqueIdData& id) {
  SocketAddress a;
  return id.magic == kIdMagic && id.version == kIdVersion && rootAddressOf(id, &a);
}

Status decodeUniqueId(const ccUniqueId& id, UniqueIdData* out) {
  UniqueIdData d;
  memcpy(&d, id.internal, sizeof(d));
  if (!uniqueIdLooksValid(d))
    return CC_ERROR(Status::kInvalidArgument, "the ccUniqueId is not valid (was it made by ccGetUniqueId?)");
  *out = d;
  return kOk;
}

void encodeUniqueId(const UniqueIdData& data, ccUniqueId* id) {
  memset(id->internal, 0, sizeof(id->internal));
  memcpy(id->internal, &data, sizeof(data));
}

}  // namespace collcomm::detail
