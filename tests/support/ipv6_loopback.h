// Whether a test can use IPv6 loopback (::1): tests that need it skip with the reason otherwise.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace collcomm::test {

// Why IPv6 loopback cannot be used here, or "" when it can.
inline std::string ipv6LoopbackUnavailable() {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return std::string("no IPv6 sockets on this machine: ") + strerror(errno);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  const int err = errno;
  close(fd);
  if (rc != 0) return std::string("cannot bind ::1 (IPv6 loopback disabled?): ") + strerror(err);
  return "";
}

}  // namespace collcomm::test
