// socket_floor - what loopback TCP alone costs on this machine: two processes, pinned to the
// first two CPUs, exchange the same number of bytes each way over and over with non-blocking
// send/recv, doing nothing else, and the program prints the time per exchange:
//   socket_floor bytes=16777216 sockets=2 buffers=hot chunk=130944 exchanges=40: min 2934.5 us,
//   median 3297.1 us, mean 3391.0 us   (one line)
// A library's allreduce over the same loopback moves as many bytes each way (two ranks: a ring or a
// one-shot send 1x the vector each way), so this is the floor it sits on (docs/net.md).
//
// Usage: socket_floor [options]
//   -b BYTES      bytes each way per exchange (K, M: powers of 1024)            [16M]
//   -n N          timed exchanges (after -w untimed ones)                       [40]
//   -w N          warm-up exchanges                                             [5]
//   -s 1|2        one socket for both directions, or one per direction          [2] (collcomm's NET)
//   -m hot|user   hot: send from and receive into one 512 KiB ring, as a FIFO does; user: buffers of
//                 BYTES, written and read once per exchange, as a library sending from and into
//                 the user's buffers does                                       [hot]
//   -c BYTES      bytes per send/recv call                                      [130944]
//   -q            re-arm TCP_QUICKACK=0 after every read that brought data
// Count packets with `nstat -n; socket_floor ...; nstat IpOutRequests`.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Options {
  size_t bytes = 16u << 20;
  int exchanges = 40;
  int warmup = 5;
  int sockets = 2;
  bool user = false;
  size_t chunk = 130944;
  bool quickack = false;
};

constexpr size_t kRing = 512u << 10;

bool parseSize(const char* s, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  size_t mult = 1;
  if (*end == 'K' || *end == 'k') {
    mult = 1u << 10;
    ++end;
  } else if (*end == 'M' || *end == 'm') {
    mult = 1u << 20;
    ++end;
  }
  if (end == s || *end != '\0' || v == 0) return false;
  *out = static_cast<size_t>(v) * mult;
  return true;
}

bool parse(int argc, char** argv, Options* o) {
  int c;
  while ((c = getopt(argc, argv, "b:n:w:s:m:c:q")) != -1) {
    switch (c) {
      case 'b':
        if (!parseSize(optarg, &o->bytes)) return false;
        break;
      case 'n':
        o->exchanges = std::atoi(optarg);
        break;
      case 'w':
        o->warmup = std::atoi(optarg);
        break;
      case 's':
        o->sockets = std::atoi(optarg);
        break;
      case 'm':
        o->user = std::strcmp(optarg, "user") == 0;
        if (!o->user && std::strcmp(optarg, "hot") != 0) return false;
        break;
      case 'c':
        if (!parseSize(optarg, &o->chunk)) return false;
        break;
      case 'q':
        o->quickack = true;
        break;
      default:
        return false;
    }
  }
  return o->exchanges > 0 && o->warmup >= 0 && (o->sockets == 1 || o->sockets == 2);
}

bool pinTo(int nth) {  // the nth CPU this process may run on
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  for (int c = 0, seen = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed) || seen++ != nth) continue;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  return false;
}

void die(const char* what) {
  std::fprintf(stderr, "socket_floor: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

// One side: sends on `out`, receives on `in` (the same socket when -s 1). Side 0 prints.
void run(int side, int out, int in, const Options& o) {
  if (!pinTo(side)) die("cannot pin to a CPU of its own (needs two)");
  const int one = 1, zero = 0;
  for (int fd : {out, in}) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // The ring has a chunk of slack past its end, so that no call is cut short where it wraps (a
  // short segment every few calls costs more than the copies it saves).
  const size_t span = o.user ? o.bytes : kRing;
  std::vector<char> src(span + o.chunk, static_cast<char>(side + 1)), dst(span + o.chunk, 0);
  std::vector<double> us;
  for (int x = 0; x < o.warmup + o.exchanges; ++x) {
    const auto t0 = std::chrono::steady_clock::now();
    size_t sent = 0, got = 0;
    while (sent < o.bytes || got < o.bytes) {
      if (sent < o.bytes) {
        const ssize_t k =
            send(out, src.data() + sent % span, std::min(o.chunk, o.bytes - sent), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0)
          sent += static_cast<size_t>(k);
        else if (k < 0 && errno != EAGAIN && errno != EINTR)
          die("send");
      }
      if (got < o.bytes) {
        const ssize_t k = recv(in, dst.data() + got % span, std::min(o.chunk, o.bytes - got), MSG_DONTWAIT);
        if (k > 0) {
          got += static_cast<size_t>(k);
          if (o.quickack) setsockopt(in, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
        } else if (k == 0) {
          die("peer closed");
        } else if (errno != EAGAIN && errno != EINTR) {
          die("recv");
        }
      }
    }
    const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    // Line the two sides up for the next exchange (spinning: a blocking wake-up costs tens of us).
    char token = 0;
    while (send(out, &token, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
    }
    while (recv(in, &token, 1, MSG_DONTWAIT) != 1) {
    }
    if (x >= o.warmup) us.push_back(t);
  }
  if (side != 0) return;
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double t : us) sum += t;
  std::printf(
      "socket_floor bytes=%zu sockets=%d buffers=%s chunk=%zu exchanges=%d%s: min %.1f us, median %.1f us, "
      "mean %.1f us\n",
      o.bytes, o.sockets, o.user ? "user" : "hot", o.chunk, o.exchanges, o.quickack ? " quickack=0" : "",
      sorted.front(), sorted[sorted.size() / 2], sum / us.size());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: socket_floor [-b BYTES] [-n N] [-w N] [-s 1|2] [-m hot|user] [-c BYTES] [-q]\n");
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 2) != 0 || getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    die("listen on loopback");
  const pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    int fds[2];
    for (int i = 0; i < o.sockets; ++i) {
      fds[i] = socket(AF_INET, SOCK_STREAM, 0);
      if (fds[i] < 0 || connect(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) die("connect");
    }
    // Side 1 sends on the first connection and receives on the second (or the same one).
    run(1, fds[0], fds[o.sockets - 1], o);
    return 0;
  }
  int fds[2];
  for (int i = 0; i < o.sockets; ++i)
    if ((fds[i] = accept(listener, nullptr, nullptr)) < 0) die("accept");
  run(0, fds[o.sockets - 1], fds[0], o);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
