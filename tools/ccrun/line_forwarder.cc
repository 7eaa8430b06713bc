// LineForwarder: prefix and forward a child's output line by line (see line_forwarder.h).
#include "line_forwarder.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>

namespace collcomm::ccrun {
namespace {

// A line longer than this is forwarded in pieces (each prefixed) rather than held without bound.
constexpr size_t kMaxLine = 64 * 1024;

// Writes all of buf; gives up quietly if ccrun's own output is gone (EPIPE): the job still runs.
void writeAll(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buf += n;
    len -= static_cast<size_t>(n);
  }
}

}  // namespace

LineForwarder::LineForwarder(int fd, int outFd, int rank)
    : fd_(fd), outFd_(outFd), prefix_("[" + std::to_string(rank) + "] ") {}

LineForwarder::~LineForwarder() { close(); }

void LineForwarder::emit(const char* data, size_t len) {
  std::string line;
  line.reserve(prefix_.size() + len + 1);
  line.append(prefix_).append(data, len).push_back('\n');
  writeAll(outFd_, line.data(), line.size());
}

void LineForwarder::onReadable() {
  if (fd_ < 0) return;
  char buf[16384];
  ssize_t n = read(fd_, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // EOF (or an error, treated as EOF)
    close();
    return;
  }
  pending_.append(buf, static_cast<size_t>(n));
  size_t start = 0;
  for (;;) {
    const size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    emit(pending_.data() + start, nl - start);
    start = nl + 1;
  }
  pending_.erase(0, start);
  while (pending_.size() >= kMaxLine) {
    emit(pending_.data(), kMaxLine);
    pending_.erase(0, kMaxLine);
  }
}

void LineForwarder::close() {
  if (fd_ < 0) return;
  if (!pending_.empty()) emit(pending_.data(), pending_.size());
  pending_.clear();
  ::close(fd_);
  fd_ = -1;
}

}  // namespace collcomm::ccrun
