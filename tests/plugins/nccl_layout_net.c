/* A NCCL net plugin of our own, written against the layouts collcomm re-declares
 * (src/transport/net/nccl_net.h), to test that collcomm loads and runs such plugins: TCP over
 * loopback, one non-blocking socket per connection, messages as {size, tag} then the bytes. Built
 * twice (tests/plugins/CMakeLists.txt): exporting ncclNetPlugin_v8, and with CC_TEST_NCCL_V9
 * exporting ncclNetPlugin_v9 only (size_t sizes, the v9 properties).
 *
 * It keeps NCCL's contract, strictly where collcomm's adapter could go wrong: receives match sends
 * in posting order and a tag that differs is an error; every buffer must be registered with the
 * comm it travels on (a null or foreign mhandle, or a buffer outside it, is an error); no function
 * blocks; at most kMaxRequests requests per comm. Errors are reported through the logger at WARN,
 * as NCCL plugins do.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/net/nccl_net.h"

enum { kMaxRequests = 8, kMagic = 0x6e636c74 };

#ifdef CC_TEST_NCCL_V9
typedef size_t SizeArg; /* isend's size and irecv's sizes */
typedef ccNcclNetProperties_v9_t Props;
typedef ccNcclNetDeviceHandle_v9_t DevHandle;
#define PLUGIN_SYMBOL ncclNetPlugin_v9
#define PLUGIN_TYPE ccNcclNet_v9_t
#else
typedef int SizeArg;
typedef ccNcclNetProperties_v8_t Props;
typedef ccNcclNetDeviceHandle_v8_t DevHandle;
#define PLUGIN_SYMBOL ncclNetPlugin_v8
#define PLUGIN_TYPE ccNcclNet_v8_t
#endif

static ccNcclLogger_t logger;

#define WARN(...) logger(CC_NCCL_LOG_WARN, 16, __FILE__, __LINE__, __VA_ARGS__)

/* What listen writes into the 128-byte handle; the connecting side keeps its handshake here. */
struct Handle {
  uint32_t magic;
  struct sockaddr_in addr;
  int connectFd; /* -1 until the first connect call */
};

struct Listen {
  int fd;
};

struct Mr {
  struct Comm* comm;
  char* base;
  size_t size;
};

struct Request {
  struct Comm* comm;
  int used;
  int isSend;
  char* data;
  int size; /* send: the size; receive: the capacity, then what arrived */
  int tag;
  int done;
  int32_t wire[2]; /* {size, tag} */
  size_t moved;    /* bytes of wire header plus data moved */
};

struct Comm {
  int fd;
  int failed;
  struct Request req[kMaxRequests];
  int order[kMaxRequests]; /* requests in posting order, not yet done */
  unsigned head, tail;
};

static int nonBlocking(int fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static struct Comm* newComm(int fd) {
  struct Comm* c = calloc(1, sizeof(struct Comm));
  if (c == NULL) return NULL;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  c->fd = fd;
  for (int i = 0; i < kMaxRequests; ++i) c->req[i].comm = c;
  return c;
}

static ccNcclResult_t pInit(ccNcclLogger_t log) {
  logger = log;
  return 0;
}

static ccNcclResult_t pDevices(int* n) {
  *n = 1;
  return 0;
}

static ccNcclResult_t pGetProperties(int dev, Props* p) {
  if (dev != 0) return 4;
  memset(p, 0, sizeof(*p));
  p->name = "lo";
  p->pciPath = NULL;
  p->guid = 0x6e636c74;
  p->ptrSupport = CC_NCCL_PTR_HOST;
  p->speed = 10000;
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
#ifdef CC_TEST_NCCL_V9
  p->forceFlush = 0;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = 0;
  p->maxP2pBytes = INT32_MAX;
  p->maxCollBytes = INT32_MAX;
#endif
  return 0;
}

static ccNcclResult_t pListen(int dev, void* handle, void** listenComm) {
  (void)dev;
  struct Handle* h = handle;
  memset(h, 0, CC_NCCL_NET_HANDLE_BYTES);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    WARN("nccl-layout: socket: %s", strerror(errno));
    return 2;
  }
  h->addr.sin_family = AF_INET;
  h->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(h->addr);
  if (bind(fd, (struct sockaddr*)&h->addr, sizeof(h->addr)) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr*)&h->addr, &len) != 0) {
    WARN("nccl-layout: listen: %s", strerror(errno));
    close(fd);
    return 2;
  }
  h->magic = kMagic;
  h->connectFd = -1;
  struct Listen* l = malloc(sizeof(*l));
  l->fd = fd;
  *listenComm = l;
  return 0;
}

static ccNcclResult_t pConnect(int dev, void* handle, void** sendComm, DevHandle** devComm) {
  (void)dev;
  (void)devComm;
  struct Handle* h = handle;
  *sendComm = NULL;
  if (h->magic != kMagic) {
    WARN("nccl-layout: connect: not a handle of this plugin");
    return 3;
  }
  if (h->connectFd < 0) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return 2;
    if (connect(fd, (struct sockaddr*)&h->addr, sizeof(h->addr)) != 0 && errno != EINPROGRESS) {
      WARN("nccl-layout: connect to port %d: %s", ntohs(h->addr.sin_port), strerror(errno));
      close(fd);
      return 2;
    }
    h->connectFd = fd;
  }
  struct pollfd p = {.fd = h->connectFd, .events = POLLOUT};
  if (poll(&p, 1, 0) == 0) return 0;
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(h->connectFd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    WARN("nccl-layout: connect to port %d: %s", ntohs(h->addr.sin_port), strerror(err));
    close(h->connectFd);
    h->connectFd = -1;
    return 2;
  }
  struct Comm* c = newComm(h->connectFd);
  h->connectFd = -1;
  if (c == NULL) return 2;
  *sendComm = c;
  return 0;
}

static ccNcclResult_t pAccept(void* listenComm, void** recvComm, DevHandle** devComm) {
  (void)devComm;
  struct Listen* l = listenComm;
  *recvComm = NULL;
  int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    WARN("nccl-layout: accept: %s", strerror(errno));
    return 2;
  }
  struct Comm* c = newComm(fd);
  if (c == NULL) return 2;
  *recvComm = c;
  return 0;
}

static ccNcclResult_t pRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (type != CC_NCCL_PTR_HOST) return 3;
  struct Mr* m = malloc(sizeof(*m));
  m->comm = comm;
  m->base = data;
  m->size = size;
  *mhandle = m;
  return 0;
}

static ccNcclResult_t pDeregMr(void* comm, void* mhandle) {
  struct Mr* m = mhandle;
  if (m == NULL || m->comm != comm) {
    WARN("nccl-layout: deregMr of a registration of another comm");
    return 3;
  }
  free(m);
  return 0;
}

/* Whether [data, data + size) lies in the registration mhandle of comm c. */
static int registered(struct Comm* c, void* data, int size, void* mhandle) {
  struct Mr* m = mhandle;
  if (m == NULL || m->comm != c) return 0;
  char* p = data;
  return p >= m->base && p + size <= m->base + m->size;
}

static struct Request* post(struct Comm* c, int isSend, void* data, int size, int tag) {
  for (int i = 0; i < kMaxRequests; ++i) {
    struct Request* r = &c->req[i];
    if (r->used) continue;
    memset(r, 0, sizeof(*r));
    r->comm = c;
    r->used = 1;
    r->isSend = isSend;
    r->data = data;
    r->size = size;
    r->tag = tag;
    r->wire[0] = size;
    r->wire[1] = tag;
    c->order[c->tail++ % kMaxRequests] = i;
    return r;
  }
  return NULL;
}

/* Moves bytes of the requests in posting order until the socket would block. 0, or an error. */
static ccNcclResult_t progress(struct Comm* c) {
  while (c->head != c->tail) {
    struct Request* r = &c->req[c->order[c->head % kMaxRequests]];
    const size_t wireBytes = sizeof(r->wire);
    for (;;) {
      const size_t total = wireBytes + (size_t)r->size;
      if (r->moved >= total) break;
      char* p;
      size_t left;
      if (r->moved < wireBytes) {
        p = (char*)r->wire + r->moved;
        left = wireBytes - r->moved;
      } else {
        p = r->data + (r->moved - wireBytes);
        left = total - r->moved;
      }
      ssize_t n = r->isSend ? send(c->fd, p, left, MSG_NOSIGNAL) : recv(c->fd, p, left, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
      if (n <= 0) {
        if (n == 0)
          logger(CC_NCCL_LOG_INFO, 16, __FILE__, __LINE__, "nccl-layout: the peer closed the connection");
        else
          WARN("nccl-layout: %s: %s", r->isSend ? "send" : "recv", strerror(errno));
        c->failed = 1;
        return 6;
      }
      r->moved += (size_t)n;
      if (!r->isSend && r->moved == wireBytes) {
        /* The header arrived: its tag must be the receive's, its size fit the capacity. */
        if (r->wire[1] != r->tag || r->wire[0] < 0 || r->wire[0] > r->size) {
          WARN("nccl-layout: a message {size %d, tag %d} reached a receive {capacity %d, tag %d}", r->wire[0],
               r->wire[1], r->size, r->tag);
          c->failed = 1;
          return 3;
        }
        r->size = r->wire[0];
      }
    }
    r->done = 1;
    ++c->head;
  }
  return 0;
}

static ccNcclResult_t pIsend(void* sendComm, void* data, SizeArg size, int tag, void* mhandle, void** request) {
  struct Comm* c = sendComm;
  *request = NULL;
  if (c->failed) return 6;
  if ((long long)size < 0 || (long long)size > INT32_MAX || !registered(c, data, (int)size, mhandle)) {
    WARN("nccl-layout: isend of %lld bytes from memory not registered with this comm", (long long)size);
    return 3;
  }
  struct Request* r = post(c, 1, data, (int)size, tag);
  if (r == NULL) return 0;
  *request = r;
  return progress(c);
}

static ccNcclResult_t pIrecv(void* recvComm, int n, void** data, SizeArg* sizes, int* tags, void** mhandles,
                             void** request) {
  struct Comm* c = recvComm;
  *request = NULL;
  if (c->failed) return 6;
  if (n != 1) {
    WARN("nccl-layout: grouped receives are not supported (n = %d)", n);
    return 3;
  }
  if ((long long)sizes[0] > INT32_MAX || !registered(c, data[0], (int)sizes[0], mhandles[0])) {
    WARN("nccl-layout: irecv of %lld bytes into memory not registered with this comm", (long long)sizes[0]);
    return 3;
  }
  struct Request* r = post(c, 0, data[0], (int)sizes[0], tags[0]);
  if (r == NULL) return 0;
  *request = r;
  return progress(c);
}

static ccNcclResult_t pIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  (void)recvComm;
  (void)n;
  (void)data;
  (void)sizes;
  (void)mhandles;
  *request = NULL;
  return 0;
}

static ccNcclResult_t pTest(void* request, int* done, int* sizes) {
  struct Request* r = request;
  struct Comm* c = r->comm;
  *done = 0;
  if (!r->used) {
    WARN("nccl-layout: test of a request that is not in use");
    return 3;
  }
  /* A request completed before the connection broke still reports done. */
  if (!r->done) {
    ccNcclResult_t rc = progress(c);
    if (rc != 0 && !r->done) return rc;
    if (!r->done) return 0;
  }
  *done = 1;
  if (sizes != NULL) sizes[0] = r->size;
  r->used = 0;
  return 0;
}

static ccNcclResult_t pClose(void* comm) {
  struct Comm* c = comm;
  if (c == NULL) return 0;
  close(c->fd);
  free(c);
  return 0;
}

static ccNcclResult_t pCloseListen(void* listenComm) {
  struct Listen* l = listenComm;
  close(l->fd);
  free(l);
  return 0;
}

__attribute__((visibility("default"))) const PLUGIN_TYPE PLUGIN_SYMBOL = {
    .name = "nccl-layout-tcp",
    .init = pInit,
    .devices = pDevices,
    .getProperties = pGetProperties,
    .listen = pListen,
    .connect = pConnect,
    .accept = pAccept,
    .regMr = pRegMr,
    .regMrDmaBuf = NULL,
    .deregMr = pDeregMr,
    .isend = pIsend,
    .irecv = pIrecv,
    .iflush = pIflush,
    .test = pTest,
    .closeSend = pClose,
    .closeRecv = pClose,
    .closeListen = pCloseListen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
#ifdef CC_TEST_NCCL_V9
    .makeVDevice = NULL,
#endif
};
