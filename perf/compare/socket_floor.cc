// socket_floor - what loopback TCP alone costs on this machine: two processes, pinned to the
// first two CPUs, exchange the same number of bytes each way over and over with non-blocking
// send/recv, doing nothing else, and the program prints the time per exchange:
//   socket_floor bytes=16777216 sockets=2 buffers=hot chunk=130944 exchanges=40: min 2934.5 us,
//   median 3297.1 us, mean 3391.0 us   (one line)
// A library's allreduce over the same loopback moves as many bytes each way (two ranks: a ring or a
// one-shot send 1x the vector each way), so this is the floor it sits on (docs/lab/2026-11-25.md). With
// -m allreduce the two sides run the least-copy two-rank allreduce of float sums instead (below).
//
// Usage: socket_floor [options]
//   -b BYTES      bytes each way per exchange (K, M: powers of 1024)            [16M]
//   -n N          timed exchanges (after -w untimed ones)                       [40]
//   -w N          warm-up exchanges                                             [5]
//   -s 1|2        one socket for both directions, or one per direction          [2] (collcomm's NET)
//   -m MODE       hot: send from and receive into one 512 KiB ring, as a FIFO does; user: buffers of
//                 BYTES, written and read once per exchange, as a library sending from and into
//                 the user's buffers does; allreduce: BYTES of floats summed out of place, with
//                 the fewest copies a two-rank ring over TCP can make: the half the peer reduces
//                 is sent straight from the input; the peer's share of this side's half lands
//                 in the 512 KiB ring and is added to the input into the output as it arrives;
//                 that reduced half is sent straight from the output (just written, in cache);
//                 the peer's reduced half lands straight in the output. The one pass of user
//                 code is the addition (at the widest vectors the CPU has); every other copy is
//                 the kernel's. staged: the same allreduce with the copies a FIFO design makes
//                 (collcomm's): the kernel sends from and receives into 512 KiB rings that stay
//                 in cache; user code copies the input into the send ring, adds the input and
//                 the receive ring into the send ring and (streaming stores) the output, and
//                 copies the peer's reduced half from the receive ring into the output
//                 (streaming stores). Both check the result after the last exchange   [hot]
//   -c BYTES      bytes per send/recv call                                      [130944]
//   -q            re-arm TCP_QUICKACK=0 after every read that brought data
// Count packets with `nstat -n; socket_floor ...; nstat IpOutRequests`.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

enum class Mode { kHot, kUser, kAllReduce, kStaged };

struct Options {
  size_t bytes = 16u << 20;
  int exchanges = 40;
  int warmup = 5;
  int sockets = 2;
  Mode mode = Mode::kHot;
  size_t chunk = 130944;
  bool quickack = false;
};

const char* modeName(Mode m) {
  return m == Mode::kHot ? "hot" : m == Mode::kUser ? "user" : m == Mode::kAllReduce ? "allreduce" : "staged";
}

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
        if (std::strcmp(optarg, "hot") == 0) {
          o->mode = Mode::kHot;
        } else if (std::strcmp(optarg, "user") == 0) {
          o->mode = Mode::kUser;
        } else if (std::strcmp(optarg, "allreduce") == 0) {
          o->mode = Mode::kAllReduce;
        } else if (std::strcmp(optarg, "staged") == 0) {
          o->mode = Mode::kStaged;
        } else {
          return false;
        }
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
  // allreduce: whole floats in each half, and chunks that fit the ring with room to spare.
  const bool reduces = o->mode == Mode::kAllReduce || o->mode == Mode::kStaged;
  const bool shapeOk = !reduces || (o->bytes % 8 == 0 && o->chunk % 4 == 0 && o->chunk < kRing / 2);
  return o->exchanges > 0 && o->warmup >= 0 && (o->sockets == 1 || o->sockets == 2) && shapeOk;
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

// out[i] = a[i] + b[i], compiled for the widest vectors the CPU has (GCC picks a clone at load).
typedef float Floats16 __attribute__((vector_size(64)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void addFloats(float* out, const float* a, const float* b, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Floats16 x, y;
    std::memcpy(&x, a + i, sizeof(x));
    std::memcpy(&y, b + i, sizeof(y));
    x += y;
    std::memcpy(out + i, &x, sizeof(x));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// One non-blocking send or receive; false when it moved nothing. Dies on errors.
bool sendSome(int fd, const char* p, size_t n, size_t* done) {
  const ssize_t k = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (k > 0) {
    *done += static_cast<size_t>(k);
    return true;
  }
  if (k < 0 && errno != EAGAIN && errno != EINTR) die("send");
  return false;
}
bool recvSome(int fd, char* p, size_t n, size_t* done, bool quickack) {
  const ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
  if (k > 0) {
    *done += static_cast<size_t>(k);
    const int zero = 0;
    if (quickack) setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
    return true;
  }
  if (k == 0) die("peer closed");
  if (errno != EAGAIN && errno != EINTR) die("recv");
  return false;
}

// Buffers of the allreduce modes: this side's input and output (BYTES each) and the rings.
struct AllReduceBuffers {
  std::vector<float> in, out, ring, sendRing;
};

// dst = src for n bytes, past the cache where the CPU has streaming stores.
void streamBytes(char* dst, const char* src, size_t n) {
#if defined(__x86_64__)
  size_t i = 0;
  while (i < n && (reinterpret_cast<uintptr_t>(dst + i) & 15) != 0) {
    dst[i] = src[i];
    ++i;
  }
  for (; i + 16 <= n; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// One two-rank allreduce (see -m allreduce). Outgoing stream: the peer's half of the input, then
// this side's reduced half as it is reduced; incoming: the peer's share of this side's half (into
// the ring, added as it arrives), then the peer's reduced half (into the output).
void allReduceOnce(int side, int out, int in, const Options& o, AllReduceBuffers& b) {
  const size_t half = o.bytes / 2;
  const char* input = reinterpret_cast<const char*>(b.in.data());
  char* output = reinterpret_cast<char*>(b.out.data());
  char* ring = reinterpret_cast<char*>(b.ring.data());
  const size_t mine = side == 0 ? 0 : half;  // offset of the half this side reduces
  const size_t theirs = half - mine;         // and of the other
  size_t sent = 0, got = 0, reduced = 0;     // stream offsets (bytes); reduced: of this half
  while (sent < 2 * half || got < 2 * half) {
    if (sent < half) {
      sendSome(out, input + theirs + sent, std::min(o.chunk, half - sent), &sent);
    } else if (sent < half + reduced) {
      const size_t at = sent - half;
      sendSome(out, output + mine + at, std::min(o.chunk, reduced - at), &sent);
    }
    if (got < half) {
      // The ring never wraps inside a call, so byte g of the stream is at ring[g % kRing].
      const size_t pos = got % kRing;
      if (recvSome(in, ring + pos, std::min({o.chunk, half - got, kRing - pos}), &got, o.quickack)) {
        const size_t upTo = got / 4 * 4;  // whole floats
        while (reduced < upTo) {
          const size_t at = reduced % kRing;
          const size_t n = std::min(upTo - reduced, kRing - at);
          addFloats(reinterpret_cast<float*>(output + mine + reduced),
                    reinterpret_cast<const float*>(input + mine + reduced), reinterpret_cast<const float*>(ring + at),
                    n / 4);
          reduced += n;
        }
      }
    } else if (got < 2 * half) {
      const size_t at = got - half;
      recvSome(in, output + theirs + at, std::min(o.chunk, half - at), &got, o.quickack);
    }
  }
}

// One two-rank allreduce through FIFO slots (see -m staged), scheduled as a ring runs it: per loop
// of a few steps of o.chunk bytes of each half, this side sends the steps of the peer's half of its
// input, receives the peer's share of its own half step by step and sends each sum, then receives
// the peer's sums. Sends go from kSlots slots of o.chunk bytes, in order, and progress while this
// side waits to receive; the kernel's socket buffers hold what arrives meanwhile.
void stagedOnce(int side, int out, int in, const Options& o, AllReduceBuffers& b) {
  constexpr size_t kSlots = 8;
  const size_t half = o.bytes / 2;
  const char* input = reinterpret_cast<const char*>(b.in.data());
  char* output = reinterpret_cast<char*>(b.out.data());
  char* recvSlot = reinterpret_cast<char*>(b.ring.data());
  char* slots = reinterpret_cast<char*>(b.sendRing.data());
  const size_t mine = side == 0 ? 0 : half;
  const size_t theirs = half - mine;
  size_t len[kSlots] = {};
  size_t produced = 0, sending = 0, sentOfSlot = 0;  // slots filled, the slot being sent, its bytes sent
  auto progressSend = [&] {
    if (sending == produced) return;
    const size_t slot = sending % kSlots;
    sendSome(out, slots + slot * o.chunk + sentOfSlot, len[slot] - sentOfSlot, &sentOfSlot);
    if (sentOfSlot == len[slot]) {
      ++sending;
      sentOfSlot = 0;
    }
  };
  auto takeSlot = [&]() -> char* {  // the next free slot, sending meanwhile
    while (produced - sending == kSlots) progressSend();
    return slots + (produced % kSlots) * o.chunk;
  };
  auto publish = [&](size_t n) {
    len[produced % kSlots] = n;
    ++produced;
    progressSend();
  };
  auto receive = [&](size_t n) {  // n bytes into recvSlot, sending meanwhile
    size_t got = 0;
    while (got < n) {
      recvSome(in, recvSlot + got, n - got, &got, o.quickack);
      progressSend();
    }
  };
  // A ring loop covers kSlots / 2 steps of each half, so that the input's steps and the sums'
  // fit the slots together.
  const size_t loop = kSlots / 2 * o.chunk;
  for (size_t base = 0; base < half; base += loop) {
    const size_t end = std::min(half, base + loop);
    for (size_t at = base; at < end; at += o.chunk) {
      const size_t n = std::min(o.chunk, end - at);
      std::memcpy(takeSlot(), input + theirs + at, n);
      publish(n);
    }
    for (size_t at = base; at < end; at += o.chunk) {
      const size_t n = std::min(o.chunk, end - at);
      receive(n);
      char* slot = takeSlot();
      for (size_t done = 0; done < n; done += 4096) {  // blocks that stay in L1
        const size_t k = std::min<size_t>(4096, n - done);
        addFloats(reinterpret_cast<float*>(slot + done), reinterpret_cast<const float*>(input + mine + at + done),
                  reinterpret_cast<const float*>(recvSlot + done), k / 4);
        streamBytes(output + mine + at + done, slot + done, k);
      }
      publish(n);
    }
    for (size_t at = base; at < end; at += o.chunk) {
      const size_t n = std::min(o.chunk, end - at);
      receive(n);
      streamBytes(output + theirs + at, recvSlot, n);
    }
  }
  while (sending < produced) progressSend();
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// One exchange of the hot and user modes: o.bytes each way, from src and into dst, which wrap
// every `span` bytes.
void exchangeOnce(int out, int in, const Options& o, const char* src, char* dst, size_t span) {
  size_t sent = 0, got = 0;
  while (sent < o.bytes || got < o.bytes) {
    if (sent < o.bytes) sendSome(out, src + sent % span, std::min(o.chunk, o.bytes - sent), &sent);
    if (got < o.bytes) recvSome(in, dst + got % span, std::min(o.chunk, o.bytes - got), &got, o.quickack);
  }
}

// One side: sends on `out`, receives on `in` (the same socket when -s 1). Side 0 prints.
void run(int side, int out, int in, const Options& o) {
  if (!pinTo(side)) die("cannot pin to a CPU of its own (needs two)");
  const int one = 1;
  for (int fd : {out, in}) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const bool allReduce = o.mode == Mode::kAllReduce || o.mode == Mode::kStaged;
  // The ring has a chunk of slack past its end, so that no call is cut short where it wraps (a
  // short segment every few calls costs more than the copies it saves).
  const size_t span = allReduce ? 0 : o.mode == Mode::kUser ? o.bytes : kRing;
  std::vector<char> src(span + o.chunk, static_cast<char>(side + 1)), dst(span + o.chunk, 0);
  AllReduceBuffers ar;
  if (allReduce) {
    ar.in.resize(o.bytes / 4);
    ar.out.assign(o.bytes / 4, -1.0f);
    ar.ring.assign(kRing / 4, 0.0f);
    ar.sendRing.assign(8 * o.chunk / 4, 0.0f);
    for (size_t i = 0; i < ar.in.size(); ++i) ar.in[i] = static_cast<float>((side + 1) * static_cast<int>(i % 7 + 1));
  }
  std::vector<double> us;
  for (int x = 0; x < o.warmup + o.exchanges; ++x) {
    const auto t0 = std::chrono::steady_clock::now();
    if (o.mode == Mode::kStaged) {
      stagedOnce(side, out, in, o, ar);
    } else if (o.mode == Mode::kAllReduce) {
      allReduceOnce(side, out, in, o, ar);
    } else {
      exchangeOnce(out, in, o, src.data(), dst.data(), span);
    }
    const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    // Line the two sides up for the next exchange (spinning: a blocking wake-up costs tens of us).
    char token = 0;
    size_t tokenSent = 0, tokenGot = 0;
    while (!sendSome(out, &token, 1, &tokenSent)) {
    }
    while (!recvSome(in, &token, 1, &tokenGot, false)) {
    }
    if (x >= o.warmup) us.push_back(t);
  }
  if (allReduce) {
    // Both sides' inputs are (side + 1) * (i % 7 + 1): every sum is 3 * (i % 7 + 1), exactly.
    for (size_t i = 0; i < ar.out.size(); ++i)
      if (ar.out[i] != static_cast<float>(3 * static_cast<int>(i % 7 + 1))) {
        std::fprintf(stderr, "socket_floor: side %d: allreduce element %zu is %g, not %d\n", side, i, ar.out[i],
                     3 * static_cast<int>(i % 7 + 1));
        std::exit(1);
      }
  }
  if (side != 0) return;
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double t : us) sum += t;
  std::printf(
      "socket_floor bytes=%zu sockets=%d buffers=%s chunk=%zu exchanges=%d%s: min %.1f us, median %.1f us, "
      "mean %.1f us\n",
      o.bytes, o.sockets, modeName(o.mode), o.chunk, o.exchanges, o.quickack ? " quickack=0" : "",
      sorted.front(), sorted[sorted.size() / 2], sum / us.size());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: socket_floor [-b BYTES] [-n N] [-w N] [-s 1|2] [-m hot|user|allreduce|staged] [-c BYTES] [-q]\n"
                 "  (allreduce: BYTES a multiple of 8, -c under 256K)\n");
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
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a timeout that kills the parent ends this side too
    if (getppid() == 1) return 1;
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
