// The built-in socket backend of the net interface (net.h) over TCP, IPv4 or IPv6.
//
// A connection is one control socket plus nThreads x nSocksPerThread data sockets, each data socket
// driven by one of nThreads helper threads of the connection. Every message starts with a header
// {tag, size} on the control socket; a message of up to kInlineBytes (or any message when there
// are no data sockets) follows on the control socket, moved by the caller's thread inside
// isend/irecv/test; a larger one is cut into at most nSocks chunks of at least kInlineBytes, dealt
// round-robin over the data sockets, and moved by the helper threads. Both sides cut and deal
// identically from the sizes in the headers, so every data socket carries its chunks in the same
// order on both ends.
//
// Handshake: the connecting side opens all sockets at once (non-blocking) and sends on each a
// hello {magic, version, secret, nonce, index, shape}; the listening side accepts, reads the
// hellos without blocking, drops any socket whose hello is wrong (secret, magic, another nonce)
// and returns the connection once the control and every data socket have arrived.
//
// Data path costs: the sender writes all queued control parts (headers, inline payloads) with one
// sendmsg; the receiver reads the control socket through a staging buffer (a header and a small
// payload in one recv; a large payload straight into its buffer) and stops at the first short
// read; test progresses a comm once per round of its caller (see socketTest). Helper threads
// poll while they hold chunks (yielding between rounds that moved nothing) and sleep only after
// kLinger without any; a poster wakes only a sleeping helper.
//
// Farewell: the receiving side may write {kFarewellMagic, word} back on the control socket before
// it closes (the only bytes that ever travel that way); a send comm that breaks reads it before it
// fails (see breakSend).
//
// Tiers: connect/accept/close are setup tier; isend/irecv/test are the proxy's data path (no
// allocation; non-blocking syscalls on the control socket; a mutex per helper thread to hand it
// chunks).
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "common/params.h"
#include "transport/net/net.h"

namespace collcomm::detail {
namespace {

constexpr uint32_t kHelloMagic = 0x43434e54;   // "CCNT"
constexpr uint32_t kHandleMagic = 0x43434e48;  // "CCNH"
constexpr uint32_t kWireVersion = 1;
constexpr uint32_t kFarewellMagic = 0x43434642;  // "CCFB"
constexpr size_t kInlineBytes = 64 << 10;
constexpr int kMaxThreads = 16;
constexpr int kMaxSocks = 64;
constexpr int kMaxIov = 32;
constexpr int kMinCpusForHelpers = 4;  // see socketThreadsAndSockets
// Receive side of the control socket: reads go through a staging buffer of kStageBytes (a header
// and a small payload in one call); a payload with at least kDirectBytes still to come is read
// straight into its buffer.
constexpr size_t kStageBytes = 16 << 10;
constexpr size_t kDirectBytes = 4 << 10;
// SO_SNDBUF/SO_RCVBUF of the sockets carrying data, where the system allows that much (else the
// kernel's autotuning stays): eight 128 KiB steps in flight never wait for the receiving proxy to
// drain the queue, and a new connection is fast at once (autotuning starts at 16 KiB of send
// buffer). On loopback with one core per rank: 2.6-2.8 GB/s at 16 MiB against 1.7-2.6 autotuned.
constexpr int kSocketBufferBytes = 1 << 20;
// How long an idle helper thread keeps polling before it sleeps.
constexpr auto kLinger = std::chrono::milliseconds(5);
// How long a broken send connection waits for the receiver's farewell (see breakSend).
constexpr auto kFarewellWait = std::chrono::milliseconds(200);

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t secret[2];
  uint64_t nonce;
  uint32_t index;  // 0: control socket; 1..nSocks: data socket index+1
  uint16_t nThreads;
  uint16_t nSocksPerThread;
};

struct MsgHeader {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};

struct ConnectState;

struct Handle {
  uint32_t magic;
  uint32_t addrLen;
  uint8_t addr[28];
  ConnectState* pending;  // the connecting side's handshake in progress (its own copy only)
};
static_assert(sizeof(Handle) <= kNetHandleBytes);

struct Device {
  NetInterface iface;
  NetProperties props;
};

std::mutex g_devMu;
bool g_devInited = false;
std::string g_devKey;  // COLLCOMM_SOCKET_IFNAME and _FAMILY the device list was made under
std::vector<Device> g_devs;

int linkSpeedMbps(const std::string& ifname) {
  std::string path = "/sys/class/net/" + ifname + "/speed";
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  int speed = 0;
  if (fscanf(f, "%d", &speed) != 1 || speed < 0) speed = 0;
  fclose(f);
  return speed;
}

// ---- requests and connections

using Clock = std::chrono::steady_clock;

struct SocketComm;

struct Request {
  SocketComm* comm = nullptr;
  bool used = false;
  // send: 0 while its control part (header, and the payload when inline) is not all sent, then 2.
  // recv: 0 unmatched; 1 inline payload arriving; 2 control part done.
  int stage = 0;
  bool inlinePayload = false;  // send: the payload follows the header on the control socket
  char* data = nullptr;
  size_t capacity = 0;  // recv: buffer size
  size_t size = 0;      // bytes of the message
  uint32_t tag = 0;
  MsgHeader hdr{};
  size_t ctrlDone = 0;  // send: bytes of header + inline payload sent; recv: inline payload bytes arrived
  uint64_t seen = 0;    // the comm's epoch when this request was last tested (see socketTest)
  std::atomic<int> pendingChunks{0};
  std::atomic<bool> chunkFailed{false};  // a helper could not move one of its chunks
};

struct Chunk {
  char* ptr;
  size_t size;
  size_t done;
  Request* req;
};

// One helper thread and the data sockets it drives.
struct Helper {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;      // under mu
  bool sleeping = false;  // under mu: waiting on cv; a poster notifies only then
  int firstSock = 0;
  int nSocks = 0;
  std::vector<std::deque<Chunk>> queues;  // per owned socket, under mu
};

struct SocketComm {
  bool isSend = false;
  Socket ctrl;
  std::vector<Socket> data;
  std::vector<std::unique_ptr<Helper>> helpers;
  int nSocksPerThread = 0;
  std::string peer;  // remote address, for sentences
  Request reqs[kNetMaxRequests];
  std::deque<Request*> order;   // posted and not yet reported done, in posting order
  uint64_t nextSock = 0;        // round-robin position for the next chunked message
  uint64_t epoch = 1;           // progress calls so far (see socketTest)
  std::atomic<int> ioError{0};  // helper threads: errno (or -1 for EOF) of the first failure
  bool failed = false;
  // send: the connection broke; the failure waits (briefly) for the receiver's farewell
  bool breaking = false;
  bool breakOnCtrl = false;  // the control socket itself reported the break
  Clock::time_point breakAt{};
  std::string breakWhy;
  unsigned char farewellBuf[8] = {};
  size_t farewellDone = 0;
  bool haveFarewell = false;
  uint32_t farewellWord = 0;
  // recv: the header being read, the request whose inline payload is being read, and what the
  // control socket delivered beyond what was asked for
  MsgHeader inHdr{};
  size_t inHdrDone = 0;
  Request* inReq = nullptr;
  size_t stageBegin = 0, stageEnd = 0;
  std::unique_ptr<char[]> stage;
};

// One non-blocking send or receive: advances *done by what the kernel took or had (kOk with no
// progress when it would block); kClosed on EOF or reset.
IoStatus sendOnce(int fd, const void* p, size_t n, size_t* done) {
  for (;;) {
    const ssize_t k = ::send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k >= 0) {
      *done += static_cast<size_t>(k);
      return {};
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return {IoCode::kClosed, err};
    return {IoCode::kError, err};
  }
}

IoStatus recvOnce(int fd, void* p, size_t n, size_t* done) {
  for (;;) {
    const ssize_t k = ::recv(fd, p, n, MSG_DONTWAIT);
    if (k > 0) {
      *done += static_cast<size_t>(k);
      return {};
    }
    if (k == 0) return n == 0 ? IoStatus{} : IoStatus{IoCode::kClosed, 0};
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return {};
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return {IoCode::kClosed, err};
    return {IoCode::kError, err};
  }
}

bool anyQueued(const Helper* h) {
  for (const auto& q : h->queues)
    if (!q.empty()) return true;
  return false;
}

// A helper polls its sockets while it has chunks (yielding the core between rounds that moved
// nothing), keeps polling for kLinger after its last chunk, then sleeps until a chunk is posted.
void helperLoop(SocketComm* comm, Helper* h) {
  std::vector<Chunk*> fronts(h->nSocks);
  Clock::time_point lastBusy = Clock::now();
  for (;;) {
    bool any = false;
    {
      std::unique_lock<std::mutex> lock(h->mu);
      if (h->stop) return;
      for (int s = 0; s < h->nSocks; ++s) {
        fronts[s] = h->queues[s].empty() ? nullptr : &h->queues[s].front();
        any |= fronts[s] != nullptr;
      }
      if (!any && Clock::now() - lastBusy >= kLinger) {
        h->sleeping = true;
        h->cv.wait(lock, [&] { return h->stop || anyQueued(h); });
        h->sleeping = false;
        lastBusy = Clock::now();
        continue;
      }
    }
    if (!any) {
      sched_yield();
      continue;
    }
    lastBusy = Clock::now();
    bool progressed = false;
    for (int s = 0; s < h->nSocks; ++s) {
      Chunk* c = fronts[s];
      if (c == nullptr) continue;
      const int fd = comm->data[h->firstSock + s].fd();
      const size_t before = c->done;
      IoStatus st = comm->isSend ? sendOnce(fd, c->ptr + c->done, c->size - c->done, &c->done)
                                 : recvOnce(fd, c->ptr + c->done, c->size - c->done, &c->done);
      if (!st.ok()) {
        int expected = 0;
        comm->ioError.compare_exchange_strong(expected, st.err != 0 ? st.err : -1);
        c->req->chunkFailed.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
        c->done = c->size;  // the comm has failed; finish the chunk so nothing waits on it
      }
      progressed |= c->done != before;
      if (c->done == c->size) {
        Request* r = c->req;
        {
          std::lock_guard<std::mutex> lock(h->mu);
          h->queues[s].pop_front();
        }
        r->pendingChunks.fetch_sub(1, std::memory_order_release);
      }
    }
    if (!progressed) sched_yield();
  }
}

void startHelpers(SocketComm* comm, int nThreads, int nSocksPerThread) {
  comm->nSocksPerThread = nSocksPerThread;
  for (int t = 0; t < nThreads; ++t) {
    auto h = std::make_unique<Helper>();
    h->firstSock = t * nSocksPerThread;
    h->nSocks = nSocksPerThread;
    h->queues.resize(nSocksPerThread);
    comm->helpers.push_back(std::move(h));
  }
  for (auto& h : comm->helpers) h->thread = std::thread(helperLoop, comm, h.get());
}

int sysctlInt(const char* path) {
  int v = 0;
  if (FILE* f = fopen(path, "r")) {
    if (fscanf(f, "%d", &v) != 1) v = 0;
    fclose(f);
  }
  return v;
}

// Sets kSocketBufferBytes where net.core.wmem_max/rmem_max allow it: a capped size would be
// smaller than what autotuning reaches, and setting a size turns autotuning off.
void sizeBuffers(const Socket& s) {
  static const bool sndOk = sysctlInt("/proc/sys/net/core/wmem_max") >= kSocketBufferBytes;
  static const bool rcvOk = sysctlInt("/proc/sys/net/core/rmem_max") >= kSocketBufferBytes;
  const int bytes = kSocketBufferBytes;
  if (sndOk) setsockopt(s.fd(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  if (rcvOk) setsockopt(s.fd(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

SocketComm* newComm(bool isSend, Socket ctrl, std::vector<Socket> data, std::string peer) {
  auto* comm = new SocketComm();
  comm->isSend = isSend;
  comm->peer = std::move(peer);
  comm->ctrl = std::move(ctrl);
  comm->data = std::move(data);
  if (!isSend) comm->stage = std::make_unique<char[]>(kStageBytes);
  for (const Socket& s : comm->data) sizeBuffers(s);
  if (comm->data.empty()) sizeBuffers(comm->ctrl);
  return comm;
}

void destroyComm(SocketComm* comm) {
  for (auto& h : comm->helpers) {
    {
      std::lock_guard<std::mutex> lock(h->mu);
      h->stop = true;
    }
    h->cv.notify_all();
  }
  for (auto& h : comm->helpers) h->thread.join();
  delete comm;
}

// The connection failed for a reason other than the peer closing it: a sentence at WARN.
Status failComm(SocketComm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    return CC_ERROR(Status::kRemoteError, "net/socket: connection %s %s: %s", comm->isSend ? "to" : "from",
                    comm->peer.c_str(), what.c_str());
  }
  return Status::kRemoteError;
}

// The peer closed the connection: how peers leave (its transport reports which rank left, and
// why, where it matters), so only INFO here.
Status failClosed(SocketComm* comm, const std::string& what) {
  if (!comm->failed) {
    comm->failed = true;
    CC_INFO(kSubsysNet, "net/socket: connection %s %s: %s", comm->isSend ? "to" : "from", comm->peer.c_str(),
            what.c_str());
  }
  return Status::kRemoteError;
}

// Send side: the connection broke. The receiver writes its farewell on the control socket before
// it closes anything, so once the control socket has delivered it, or ended, or broken itself
// (the farewell precedes that close on the same stream), the failure is final. A data socket may
// report the close first (another stream); then the farewell gets kFarewellWait to arrive.
Status breakSend(SocketComm* comm, const std::string& why, bool onCtrl) {
  if (!comm->breaking) {
    comm->breaking = true;
    comm->breakAt = Clock::now();
    comm->breakWhy = why;
  }
  comm->breakOnCtrl |= onCtrl;
  for (;;) {
    const ssize_t n = ::recv(comm->ctrl.fd(), comm->farewellBuf + comm->farewellDone,
                             sizeof(comm->farewellBuf) - comm->farewellDone, MSG_DONTWAIT);
    if (n > 0) {
      comm->farewellDone += static_cast<size_t>(n);
      if (comm->farewellDone < sizeof(comm->farewellBuf)) continue;
      uint32_t magic = 0;
      memcpy(&magic, comm->farewellBuf, 4);
      if (magic == kFarewellMagic) {
        memcpy(&comm->farewellWord, comm->farewellBuf + 4, 4);
        comm->haveFarewell = true;
      }
      break;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !comm->breakOnCtrl &&
        Clock::now() - comm->breakAt < kFarewellWait)
      return kOk;  // the control socket is still open: the farewell may be on its way
    break;
  }
  return failClosed(comm, comm->breakWhy + (comm->haveFarewell ? " after leaving a farewell" : ""));
}

Status failIo(SocketComm* comm, const IoStatus& st, bool onCtrl) {
  if (st.code != IoCode::kClosed) return failComm(comm, st.describe());
  const std::string why = "the peer closed the connection (" + st.describe() + ")";
  return comm->isSend ? breakSend(comm, why, onCtrl) : failClosed(comm, why);
}

// Cuts a message into chunks over the data sockets (the same way on both sides).
void postChunks(SocketComm* comm, Request* r) {
  const size_t nSocks = comm->data.size();
  size_t chunk = std::max(kInlineBytes, (r->size + nSocks - 1) / nSocks);
  chunk = (chunk + 63) / 64 * 64;
  const int nChunks = static_cast<int>((r->size + chunk - 1) / chunk);
  r->pendingChunks.store(nChunks, std::memory_order_relaxed);
  for (int i = 0; i < nChunks; ++i) {
    const size_t off = static_cast<size_t>(i) * chunk;
    const int sock = static_cast<int>((comm->nextSock + i) % nSocks);
    Helper& h = *comm->helpers[sock / comm->nSocksPerThread];
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(h.mu);
      h.queues[sock - h.firstSock].push_back(Chunk{r->data + off, std::min(chunk, r->size - off), 0, r});
      wake = h.sleeping;
    }
    if (wake) h.cv.notify_one();
  }
  comm->nextSock += static_cast<uint64_t>(nChunks);
}

bool chunked(const SocketComm* comm, size_t size) { return !comm->data.empty() && size > kInlineBytes; }

// Sends the control parts of every queued message (headers, inline payloads) with one sendmsg.
Status progressSend(SocketComm* comm) {
  iovec iov[kMaxIov];
  int n = 0;
  for (Request* r : comm->order) {
    if (r->stage != 0) continue;  // the unsent ones are the last ones posted
    if (n + 2 > kMaxIov) break;
    size_t off = r->ctrlDone;
    if (off < sizeof(MsgHeader)) {
      iov[n++] = iovec{reinterpret_cast<char*>(&r->hdr) + off, sizeof(MsgHeader) - off};
      off = 0;
    } else {
      off -= sizeof(MsgHeader);
    }
    if (r->inlinePayload && off < r->size) iov[n++] = iovec{r->data + off, r->size - off};
  }
  if (n == 0) return kOk;
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = static_cast<size_t>(n);
  ssize_t sent;
  do {
    sent = ::sendmsg(comm->ctrl.fd(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return kOk;
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN) return failIo(comm, {IoCode::kClosed, err}, true);
    return failIo(comm, {IoCode::kError, err}, true);
  }
  size_t left = static_cast<size_t>(sent);
  for (Request* r : comm->order) {
    if (r->stage != 0) continue;
    const size_t total = sizeof(MsgHeader) + (r->inlinePayload ? r->size : 0);
    const size_t take = std::min(left, total - r->ctrlDone);
    r->ctrlDone += take;
    left -= take;
    if (r->ctrlDone < total) break;
    r->stage = 2;
    if (!r->inlinePayload) postChunks(comm, r);
  }
  return kOk;
}

// Receive side: reads the control socket into the staging buffer (headers, small payloads and
// whatever follows them, in one call); large inline payloads go straight into their buffers. A
// read that comes back short means the socket is drained: the round stops there, so an idle
// connection costs one recv per progress call.
Status recvIo(SocketComm* comm, const IoStatus& st) {
  if (st.code != IoCode::kClosed) return failComm(comm, st.describe());
  const bool boundary = comm->inReq == nullptr && comm->inHdrDone == 0 && comm->stageBegin == comm->stageEnd;
  return failClosed(comm, boundary
                              ? "the peer closed the connection after its last message"
                              : "the peer closed the connection in the middle of a message (" + st.describe() + ")");
}

// Refills the empty staging buffer; *drained when the read came back short.
Status fillStage(SocketComm* comm, bool* drained) {
  size_t got = 0;
  IoStatus st = recvOnce(comm->ctrl.fd(), comm->stage.get(), kStageBytes, &got);
  if (!st.ok()) return recvIo(comm, st);
  comm->stageBegin = 0;
  comm->stageEnd = got;
  if (got < kStageBytes) *drained = true;
  return kOk;
}

size_t takeStaged(SocketComm* comm, void* dst, size_t want) {
  const size_t n = std::min(want, comm->stageEnd - comm->stageBegin);
  memcpy(dst, comm->stage.get() + comm->stageBegin, n);
  comm->stageBegin += n;
  return n;
}

Status progressRecv(SocketComm* comm) {
  bool drained = false;
  for (;;) {
    if (comm->inReq == nullptr) {
      while (comm->inHdrDone < sizeof(MsgHeader)) {
        if (comm->stageBegin == comm->stageEnd) {
          if (drained) return kOk;
          CC_CHECK(fillStage(comm, &drained));
          if (comm->stageBegin == comm->stageEnd) return kOk;
        }
        comm->inHdrDone += takeStaged(comm, reinterpret_cast<char*>(&comm->inHdr) + comm->inHdrDone,
                                      sizeof(MsgHeader) - comm->inHdrDone);
      }
      Request* m = nullptr;
      for (Request* r : comm->order)
        if (r->stage == 0 && r->tag == comm->inHdr.tag) {
          m = r;
          break;
        }
      if (m == nullptr) return kOk;  // waits for a matching irecv
      if (comm->inHdr.size > m->capacity)
        return failComm(comm, "a message of " + std::to_string(comm->inHdr.size) + " bytes arrived for a buffer of " +
                                  std::to_string(m->capacity) + " bytes (tag " + std::to_string(m->tag) + ")");
      m->size = comm->inHdr.size;
      if (chunked(comm, m->size)) {
        postChunks(comm, m);
        m->stage = 2;
        comm->inHdrDone = 0;
        continue;
      }
      m->stage = 1;
      m->ctrlDone = 0;
      comm->inReq = m;
    }
    Request* r = comm->inReq;
    r->ctrlDone += takeStaged(comm, r->data + r->ctrlDone, r->size - r->ctrlDone);
    while (r->ctrlDone < r->size) {
      if (drained) return kOk;
      const size_t left = r->size - r->ctrlDone;
      if (left >= kDirectBytes) {
        const size_t before = r->ctrlDone;
        IoStatus st = recvOnce(comm->ctrl.fd(), r->data + r->ctrlDone, left, &r->ctrlDone);
        if (!st.ok()) return recvIo(comm, st);
        if (r->ctrlDone - before < left) drained = true;
      } else {
        CC_CHECK(fillStage(comm, &drained));
        r->ctrlDone += takeStaged(comm, r->data + r->ctrlDone, left);
      }
    }
    r->stage = 2;
    comm->inReq = nullptr;
    comm->inHdrDone = 0;
  }
}

Status progress(SocketComm* comm) {
  comm->epoch++;
  if (comm->failed) return Status::kRemoteError;
  if (comm->breaking) return breakSend(comm, comm->breakWhy, false);
  if (const int err = comm->ioError.load(std::memory_order_acquire); err != 0) {
    if (err < 0 || err == ECONNRESET || err == EPIPE || err == ENOTCONN) {
      const std::string why = err < 0 ? std::string("the peer closed a data connection")
                                      : std::string("the peer closed a data connection (") + strerror(err) + ")";
      return comm->isSend ? breakSend(comm, why, false) : failClosed(comm, why);
    }
    return failComm(comm, std::string("data socket: ") + strerror(err));
  }
  return comm->isSend ? progressSend(comm) : progressRecv(comm);
}

Request* newRequest(SocketComm* comm) {
  if (comm->order.size() >= static_cast<size_t>(kNetMaxRequests)) return nullptr;
  for (Request& r : comm->reqs) {
    if (r.used) continue;
    r.used = true;
    r.comm = comm;
    r.stage = 0;
    r.ctrlDone = 0;
    r.seen = comm->epoch;
    r.pendingChunks.store(0, std::memory_order_relaxed);
    r.chunkFailed.store(false, std::memory_order_relaxed);
    comm->order.push_back(&r);
    return &r;
  }
  return nullptr;
}

// ---- handshake

struct ConnectState {
  SocketAddress addr;
  std::vector<Socket> socks;
  std::vector<int> stage;  // 0 connecting, 1 sending hello, 2 done
  std::vector<size_t> helloDone;
  std::vector<Hello> hellos;
  int nThreads = 0;
  int nSocksPerThread = 0;
};

struct ListenComm {
  Socket listener;
  SocketAddress addr;
  NetSecret secret{};
  struct Pending {
    Socket sock;
    Hello hello{};
    size_t done = 0;
    std::string from;
  };
  std::vector<Pending> pending;
  bool haveNonce = false;
  uint64_t nonce = 0;
  int nThreads = -1;
  int nSocksPerThread = -1;
  Socket ctrl;
  std::vector<Socket> data;
};

// ---- ops

// Finds the devices; again when COLLCOMM_SOCKET_IFNAME or COLLCOMM_SOCKET_FAMILY changed since
// (the bootstrap reads them at every communicator's creation too, so both keep agreeing).
// Connections already made keep their addresses.
Status socketInit() {
  std::lock_guard<std::mutex> lock(g_devMu);
  const std::string key = paramStr(Param::kSocketIfname) + "|" + paramStr(Param::kSocketFamily);
  if (g_devInited && key == g_devKey) return kOk;
  std::vector<NetInterface> ifs;
  CC_CHECK(findInterfaces(16, &ifs));
  g_devs.clear();
  for (const NetInterface& ni : ifs) {
    Device d;
    d.iface = ni;
    d.props = NetProperties{};
    snprintf(d.props.name, sizeof(d.props.name), "%s", ni.name.c_str());
    snprintf(d.props.address, sizeof(d.props.address), "%s", ni.addr.hostString().c_str());
    d.props.speedMbps = linkSpeedMbps(ni.name);
    d.props.latencyUs = 0;
    d.props.maxComms = 65536;
    d.props.maxRecvs = 1;
    d.props.maxMessageBytes = 1ull << 40;
    d.props.supportsDeviceMemory = false;
    g_devs.push_back(d);
    CC_INFO(kSubsysNet, "net/socket: device %zu is %s %s, speed %d Mb/s", g_devs.size() - 1, ni.name.c_str(),
            ni.addr.hostString().c_str(), d.props.speedMbps);
  }
  g_devInited = true;
  g_devKey = key;
  return kOk;
}

Status socketDevices(int* count) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  *count = static_cast<int>(g_devs.size());
  return kOk;
}

Status deviceAt(int dev, Device* out) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  if (dev < 0 || dev >= static_cast<int>(g_devs.size()))
    return CC_ERROR(Status::kInternalError, "net/socket: no device %d (there are %zu)", dev, g_devs.size());
  *out = g_devs[dev];
  return kOk;
}

Status socketGetProperties(int dev, NetProperties* props) {
  Device d;
  CC_CHECK(deviceAt(dev, &d));
  *props = d.props;
  return kOk;
}

Status socketListen(int dev, const NetSecret& secret, void* handle, void** listenComm) {
  Device d;
  CC_CHECK(deviceAt(dev, &d));
  auto lc = std::make_unique<ListenComm>();
  IoStatus st = Socket::listen(d.iface.addr, &lc->listener, &lc->addr);
  if (!st.ok())
    return CC_ERROR(Status::kSystemError, "net/socket: cannot listen on %s (%s): %s", d.iface.name.c_str(),
                    d.iface.addr.hostString().c_str(), st.describe().c_str());
  lc->secret = secret;
  Handle h{};
  h.magic = kHandleMagic;
  h.addrLen = lc->addr.len();
  memcpy(h.addr, lc->addr.sa(), lc->addr.len());
  h.pending = nullptr;
  memset(handle, 0, kNetHandleBytes);
  memcpy(handle, &h, sizeof(h));
  *listenComm = lc.release();
  return kOk;
}

void socketAbandonConnect(void* handle) {
  Handle* h = static_cast<Handle*>(handle);
  delete h->pending;
  h->pending = nullptr;
}

Status socketConnect(int dev, const NetSecret& secret, void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle* h = static_cast<Handle*>(handle);
  if (h->pending == nullptr) {
    if (h->magic != kHandleMagic) return CC_ERROR(Status::kInternalError, "net/socket: connect with a bad handle");
    Device d;
    CC_CHECK(deviceAt(dev, &d));
    auto cs = std::make_unique<ConnectState>();
    if (!SocketAddress::fromSockaddr(h->addr, h->addrLen, &cs->addr))
      return CC_ERROR(Status::kInternalError, "net/socket: connect handle holds no valid address");
    socketThreadsAndSockets(d.props.speedMbps, processCpus(), &cs->nThreads, &cs->nSocksPerThread);
    const int nSocks = cs->nThreads * cs->nSocksPerThread;
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce)))
      nonce = reinterpret_cast<uintptr_t>(cs.get()) ^ static_cast<uint64_t>(getpid());
    for (int i = 0; i <= nSocks; ++i) {
      Socket s(::socket(cs->addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!s.valid()) return CC_ERROR(Status::kSystemError, "net/socket: socket() failed: %s", strerror(errno));
      if (::connect(s.fd(), cs->addr.sa(), cs->addr.len()) != 0 && errno != EINPROGRESS && errno != EINTR)
        return CC_ERROR(Status::kRemoteError, "net/socket: connect to %s failed: %s", cs->addr.toString().c_str(),
                        strerror(errno));
      int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      cs->socks.push_back(std::move(s));
      cs->stage.push_back(0);
      cs->helloDone.push_back(0);
      Hello hello{kHelloMagic, kWireVersion, {secret.words[0], secret.words[1]}, nonce, static_cast<uint32_t>(i),
                  static_cast<uint16_t>(cs->nThreads), static_cast<uint16_t>(cs->nSocksPerThread)};
      cs->hellos.push_back(hello);
    }
    h->pending = cs.release();
  }
  ConnectState* cs = h->pending;
  bool all = true;
  for (size_t i = 0; i < cs->socks.size(); ++i) {
    if (cs->stage[i] == 0) {
      pollfd p{cs->socks[i].fd(), POLLOUT, 0};
      if (poll(&p, 1, 0) <= 0) {
        all = false;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(cs->socks[i].fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        std::string where = cs->addr.toString();
        socketAbandonConnect(handle);
        return CC_ERROR(Status::kRemoteError, "net/socket: connect to %s failed: %s", where.c_str(), strerror(err));
      }
      cs->stage[i] = 1;
    }
    if (cs->stage[i] == 1) {
      IoStatus st = cs->socks[i].sendSome(&cs->hellos[i], sizeof(Hello), &cs->helloDone[i]);
      if (!st.ok()) {
        std::string where = cs->addr.toString();
        socketAbandonConnect(handle);
        return CC_ERROR(Status::kRemoteError, "net/socket: sending the hello to %s failed: %s", where.c_str(),
                        st.describe().c_str());
      }
      if (cs->helloDone[i] == sizeof(Hello)) cs->stage[i] = 2;
    }
    all &= cs->stage[i] == 2;
  }
  if (!all) return kOk;
  std::vector<Socket> data;
  for (size_t i = 1; i < cs->socks.size(); ++i) data.push_back(std::move(cs->socks[i]));
  SocketComm* comm = newComm(true, std::move(cs->socks[0]), std::move(data), cs->addr.toString());
  startHelpers(comm, cs->socks.size() > 1 ? cs->nThreads : 0, cs->nSocksPerThread);
  socketAbandonConnect(handle);
  *sendComm = comm;
  return kOk;
}

Status socketAccept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* lc = static_cast<ListenComm*>(listenComm);
  for (;;) {
    Socket s;
    SocketAddress from;
    IoStatus st = lc->listener.tryAccept(&s, &from);
    if (!st.ok())
      return CC_ERROR(Status::kSystemError, "net/socket: accept on %s failed: %s", lc->addr.toString().c_str(),
                      st.describe().c_str());
    if (!s.valid()) break;
    ListenComm::Pending p;
    p.sock = std::move(s);
    p.from = from.toString();
    lc->pending.push_back(std::move(p));
  }
  for (size_t i = 0; i < lc->pending.size();) {
    ListenComm::Pending& p = lc->pending[i];
    IoStatus st = p.sock.recvSome(&p.hello, sizeof(Hello), &p.done);
    const char* drop = nullptr;
    if (!st.ok()) drop = "it closed before its hello";
    else if (p.done < sizeof(Hello)) {
      ++i;
      continue;
    }
    const Hello& hl = p.hello;
    if (drop == nullptr && (hl.magic != kHelloMagic || hl.version != kWireVersion)) drop = "its hello is not collcomm's";
    if (drop == nullptr && !(hl.secret[0] == lc->secret.words[0] && hl.secret[1] == lc->secret.words[1]))
      drop = "it presented another secret";
    const int nSocks = hl.nThreads * hl.nSocksPerThread;
    if (drop == nullptr && (hl.nThreads > kMaxThreads || nSocks > kMaxSocks || static_cast<int>(hl.index) > nSocks))
      drop = "its hello describes an impossible connection";
    if (drop == nullptr && lc->haveNonce &&
        (hl.nonce != lc->nonce || hl.nThreads != lc->nThreads || hl.nSocksPerThread != lc->nSocksPerThread))
      drop = "it belongs to another connection";
    if (drop == nullptr) {
      if (!lc->haveNonce) {
        lc->haveNonce = true;
        lc->nonce = hl.nonce;
        lc->nThreads = hl.nThreads;
        lc->nSocksPerThread = hl.nSocksPerThread;
        lc->data.resize(nSocks);
      }
      Socket& slot = hl.index == 0 ? lc->ctrl : lc->data[hl.index - 1];
      if (slot.valid()) drop = "it repeats a socket of the connection";
      else slot = std::move(p.sock);
    }
    if (drop != nullptr)
      CC_WARN("net/socket: dropped a connection from %s to %s: %s", p.from.c_str(), lc->addr.toString().c_str(), drop);
    lc->pending.erase(lc->pending.begin() + static_cast<long>(i));
  }
  if (!lc->haveNonce || !lc->ctrl.valid()) return kOk;
  for (const Socket& s : lc->data)
    if (!s.valid()) return kOk;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  SocketAddress peer;
  std::string peerName;
  if (getpeername(lc->ctrl.fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
      SocketAddress::fromSockaddr(&ss, len, &peer))
    peerName = peer.toString();
  SocketComm* comm = newComm(false, std::move(lc->ctrl), std::move(lc->data), std::move(peerName));
  startHelpers(comm, comm->data.empty() ? 0 : lc->nThreads, lc->nSocksPerThread);
  lc->haveNonce = false;
  lc->data.clear();
  *recvComm = comm;
  return kOk;
}

Status socketRegMr(void*, void*, size_t, NetMemType type, void** mhandle) {
  if (type != NetMemType::kHost)
    return CC_ERROR(Status::kInternalError, "net/socket: only host memory can be registered");
  *mhandle = nullptr;
  return kOk;
}

Status socketDeregMr(void*, void*) { return kOk; }

Status socketIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void*, void** request) {
  auto* comm = static_cast<SocketComm*>(sendComm);
  *request = nullptr;
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(const_cast<void*>(data));
  r->size = size;
  r->tag = tag;
  r->hdr = MsgHeader{tag, 0, size};
  r->inlinePayload = !chunked(comm, size);
  *request = r;
  const Status s = progress(comm);  // on its way at once
  r->seen = comm->epoch;
  return s;
}

Status socketIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void**,
                   void** request) {
  auto* comm = static_cast<SocketComm*>(recvComm);
  *request = nullptr;
  if (n != 1) return CC_ERROR(Status::kInternalError, "net/socket: irecv takes one buffer, not %d", n);
  if (comm->failed) return Status::kRemoteError;
  Request* r = newRequest(comm);
  if (r == nullptr) return kOk;
  r->data = static_cast<char*>(data[0]);
  r->capacity = sizes[0];
  r->tag = tags[0];
  *request = r;
  return kOk;  // the first test reads
}

bool complete(const Request* r) { return r->stage == 2 && r->pendingChunks.load(std::memory_order_acquire) == 0; }

// Progress: one progress call reads or writes for every request of the comm, so a caller testing
// several requests in turn (the proxy tests the oldest of each kind every round) needs one per
// round. A test progresses the comm when this request was already tested since the comm's last
// progress (a new round, or a caller waiting on it alone); otherwise it reports what the last one
// found. A repeated test of the same request always progresses.
Status socketTest(void* request, bool* done, size_t* sizes) {
  auto* r = static_cast<Request*>(request);
  SocketComm* comm = r->comm;
  *done = false;
  if (!complete(r)) {
    Status s = kOk;
    if (r->seen == comm->epoch) s = progress(comm);
    else if (comm->failed) s = Status::kRemoteError;
    r->seen = comm->epoch;
    // A request that completed is reported even if the stream broke after it (the peer closed
    // right after its last message): the caller lands what arrived before it learns of the break.
    if (!complete(r)) return s;
  }
  if (r->chunkFailed.load(std::memory_order_relaxed)) return comm->failed ? Status::kRemoteError : progress(comm);
  *done = true;
  if (sizes != nullptr) sizes[0] = r->size;
  for (auto it = comm->order.begin(); it != comm->order.end(); ++it)
    if (*it == r) {
      comm->order.erase(it);
      break;
    }
  r->used = false;
  return kOk;
}

Status socketFarewell(void* recvComm, uint32_t word) {
  auto* comm = static_cast<SocketComm*>(recvComm);
  unsigned char buf[8];
  memcpy(buf, &kFarewellMagic, 4);
  memcpy(buf + 4, &word, 4);
  (void)::send(comm->ctrl.fd(), buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);  // 8 bytes into an idle direction
  return kOk;
}

bool socketPeerFarewell(void* sendComm, uint32_t* word) {
  auto* comm = static_cast<SocketComm*>(sendComm);
  if (!comm->haveFarewell) return false;
  *word = comm->farewellWord;
  return true;
}

Status socketCloseComm(void* c) {
  if (c != nullptr) destroyComm(static_cast<SocketComm*>(c));
  return kOk;
}

Status socketCloseListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return kOk;
}

const NetOpsV1 kSocketNet = {
    .name = "Socket",
    .version = kNetInterfaceVersion,
    .init = socketInit,
    .devices = socketDevices,
    .getProperties = socketGetProperties,
    .listen = socketListen,
    .connect = socketConnect,
    .abandonConnect = socketAbandonConnect,
    .accept = socketAccept,
    .regMr = socketRegMr,
    .deregMr = socketDeregMr,
    .isend = socketIsend,
    .irecv = socketIrecv,
    .test = socketTest,
    .farewell = socketFarewell,
    .peerFarewell = socketPeerFarewell,
    .closeSend = socketCloseComm,
    .closeRecv = socketCloseComm,
    .closeListen = socketCloseListen,
};

}  // namespace

const NetOpsV1& socketNet() { return kSocketNet; }

void socketThreadsAndSockets(int speedMbps, int cpus, int* nThreads, int* nSocksPerThread) {
  // Auto: helper threads only pay off with cores to run on; a process that may use fewer than
  // kMinCpusForHelpers CPUs (bound to a core per rank, a small VM) moves everything on the control
  // socket with its proxy thread (on loopback with a core per rank: 2.6-2.8 GB/s at 16 MiB against
  // 2.0-2.4 with a helper). Otherwise one helper thread with two sockets up to 25 Gb/s (and when the
  // speed is unknown, as on loopback); more threads for faster links, where one core cannot keep
  // a socket busy.
  int t = speedMbps >= 100000 ? 4 : speedMbps >= 25000 ? 2 : 1;
  if (cpus > 0 && cpus < kMinCpusForHelpers) t = 0;
  int s = 2;
  const int64_t userT = paramInt(Param::kSocketNthreads), userS = paramInt(Param::kNsocksPerthread);
  if (userT >= 0) t = static_cast<int>(std::min<int64_t>(userT, kMaxThreads));
  if (userS > 0) s = static_cast<int>(std::min<int64_t>(userS, kMaxSocks));
  if (t * s > kMaxSocks) s = kMaxSocks / t;
  *nThreads = t;
  *nSocksPerThread = t == 0 ? 0 : s;
}

int processCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace collcomm::detail
