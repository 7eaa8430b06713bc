#include "tcp_segments.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace collcomm::test {

int64_t tcpSegmentsOut(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
  if (len < offsetof(tcp_info, tcpi_segs_out) + sizeof(info.tcpi_segs_out)) return -1;
  return info.tcpi_segs_out;
}

}  // namespace collcomm::test
