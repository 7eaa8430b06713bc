// Segments a TCP socket has sent (TCP_INFO's tcpi_segs_out, kernel 4.2 on), for tests that check
// how the socket backend's messages leave. Lives apart from <netinet/tcp.h>, whose tcp_info is
// older than the field and clashes with the kernel's header.
#pragma once

#include <cstdint>

namespace collcomm::test {

// -1 when the kernel does not report it.
int64_t tcpSegmentsOut(int fd);

}  // namespace collcomm::test
