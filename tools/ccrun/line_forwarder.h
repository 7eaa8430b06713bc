// Forwards one child stream (a pipe) to one of ccrun's streams line by line, each line prefixed
// with "[rank] " and written with a single write(2), so lines of different ranks never mix.
// Single-threaded: owned and driven by ccrun's poll loop.
#pragma once

#include <string>

namespace collcomm::ccrun {

class LineForwarder {
 public:
  // Reads from fd (owned: closed at EOF or by close()) and writes to outFd (not owned).
  LineForwarder(int fd, int outFd, int rank);
  ~LineForwarder();
  LineForwarder(const LineForwarder&) = delete;
  LineForwarder& operator=(const LineForwarder&) = delete;

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }

  // Call when poll says fd is readable (or hung up). Reads what is there without blocking,
  // forwards every complete line; at EOF forwards the unterminated rest and closes.
  void onReadable();
  // Forwards an unterminated rest and closes the pipe (used when draining stops waiting).
  void close();

 private:
  void emit(const char* data, size_t len);

  int fd_;
  int outFd_;
  std::string prefix_;
  std::string pending_;  // bytes after the last newline seen
};

}  // namespace collcomm::ccrun
