// The adapter from a NCCL net plugin of version 8 or 9 (nccl_net.h, exported as ncclNetPlugin_v8
// or ncclNetPlugin_v9) to the internal interface (net.h, NetOpsV1), so that collcomm runs over the plugins clusters
// already have (aws-ofi-nccl over libfabric, the InfiniBand and SHARP plugins).
//
// The contracts differ in three ways, and this file bridges each:
//   Matching. NCCL matches each irecv of a comm to the sender's isend of the same rank in posting
//     order; net.h matches a message to the earliest posted irecv with its tag, and the NET
//     transport posts its receives for different tags (data steps, LL steps, the peer's state word)
//     in an order the sender does not follow. So every message travels as two plugin messages on
//     the comm: a 16-byte header {tag, size} into a buffer of the adapter, then the payload
//     straight into the irecv the header matched (no copy; a 0-byte message has no payload). A
//     header no irecv matches yet waits, holding the stream behind it, as net.h allows.
//   Registration. NCCL plugins move registered memory only; the transport sends its small control
//     words unregistered (null mhandle), so the adapter registers such a buffer on first use and
//     keeps the registration with the comm (the control words lie at fixed places: the first use
//     is the only allocation on the data path).
//   Authentication. NCCL has no secret: a connection is whatever reaches the listener. collcomm
//     cannot check it; it says so once at WARN (docs/net.md, "Plugins").
// Not mapped: farewell (the sender of a receiver that left sees the comm fail, which the
// transport reports as the peer's departure), grouped receives (maxRecvs is reported as 1), device
// offload (none asked), DMA-BUF and iflush (host memory only).
//
// Tiers: connect/accept/close are setup tier; isend/irecv/test are the proxy's data path, with a
// fixed pool of requests per comm.
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/log.h"
#include "transport/net/net_plugin.h"

namespace collcomm::detail {
namespace {

constexpr int kRequests = 64;     // adapter requests per comm (net.h asks at least kNetMaxRequests)
constexpr int kWireTag = 0x6363;  // the plugin tag of every message: matching is by order (above)

struct Header {
  uint32_t tag;
  uint32_t reserved;
  uint64_t size;
};
static_assert(sizeof(Header) == 16);

struct Comm;

// One adapter request: a message of the caller, as its header and payload plugin requests.
struct Request {
  Comm* comm = nullptr;
  bool used = false;
  uint64_t seq = 0;  // receive: posting order, for matching
  void* data = nullptr;
  size_t size = 0;  // send: the message; receive: the capacity
  uint32_t tag = 0;
  void* mhandle = nullptr;
  // Send: 0 nothing posted, 1 header posted, 2 all posted. Receive: 0 unmatched, 1 payload
  // posted, 2 arrived.
  int stage = 0;
  void* headerReq = nullptr;  // plugin requests, null once done
  void* payloadReq = nullptr;
  size_t arrived = 0;
};

struct AutoMr {
  const char* base;
  size_t size;
  void* mhandle;
};

struct Comm {
  const NetPluginSlot* slot = nullptr;
  bool isSend = false;
  void* plugin = nullptr;  // the plugin's comm
  bool failed = false;
  Request req[kRequests];
  // Send: the header of req[i] at i; receive: the incoming header at kRequests. One registration.
  Header headers[kRequests + 1] = {};
  void* headersMr = nullptr;
  // Send: the requests not yet posted whole, in posting order (ring of indices into req).
  int order[kRequests] = {};
  uint32_t orderHead = 0, orderTail = 0;
  // Receive: the plugin request of the incoming header, and whether it arrived and waits for a match.
  void* headerInReq = nullptr;
  bool headerInValid = false;
  uint64_t nextSeq = 0;
  std::vector<AutoMr> autoMrs;
};

// What differs between the versions the adapter maps (nccl_net.h says how they differ).
struct V8 {
  using Net = ccNcclNet_v8_t;
  using Props = ccNcclNetProperties_v8_t;
  using DevHandle = ccNcclNetDeviceHandle_v8_t;
  using Size = int;  // of isend and irecv
};
struct V9 {
  using Net = ccNcclNet_v9_t;
  using Props = ccNcclNetProperties_v9_t;
  using DevHandle = ccNcclNetDeviceHandle_v9_t;
  using Size = size_t;
};

template <class V>
const typename V::Net& net(const NetPluginSlot& s) {
  return *static_cast<const typename V::Net*>(s.nccl);
}
const char* nameOf(const NetPluginSlot& s) { return s.name.c_str(); }

// The plugin's last warning on this thread: NCCL plugins say why through the logger only.
thread_local char tLastWarning[512];

void ncclLogger(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
  LogLevel l;
  if (level == CC_NCCL_LOG_WARN || level == CC_NCCL_LOG_ABORT)
    l = LogLevel::kWarn;
  else if (level == CC_NCCL_LOG_INFO)
    l = LogLevel::kInfo;
  else if (level == CC_NCCL_LOG_TRACE)
    l = LogLevel::kTrace;
  else
    return;
  const bool warn = l == LogLevel::kWarn;
  if (!warn && !logEnabled(l, kSubsysNet)) return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt != nullptr ? fmt : "", ap);
  va_end(ap);
  if (warn) snprintf(tLastWarning, sizeof(tLastWarning), "%s", text);
  if (logEnabled(l, kSubsysNet)) logMessage(l, kSubsysNet, file != nullptr ? file : "?", line, "net plugin: %s", text);
}

Status codeOf(int r) {
  switch (r) {
    case ccSystemError:
    case ccInternalError:
    case ccInvalidArgument:
    case ccInvalidUsage:
    case ccRemoteError:
      return static_cast<Status>(r);
    default:
      return Status::kInternalError;
  }
}

// A connection's failure that the peer caused (ccRemoteError: it closed, which is how ranks leave)
// is recorded for ccGetLastError but logged at INFO only (net.h, Departures); the transport,
// which knows the peer's rank, reports it where it matters.
Status remoteFailure(const std::string& sentence) {
  CC_INFO(kSubsysNet, "%s", sentence.c_str());
  setThreadLastError(sentence);
  return Status::kRemoteError;
}

Status pluginFailed(const NetPluginSlot& s, int r, const char* what) {
  const std::string why = tLastWarning[0] != '\0' ? std::string(": ") + tLastWarning : std::string();
  tLastWarning[0] = '\0';
  if (r == ccRemoteError)
    return remoteFailure("net plugin " + s.name + " (NCCL v" + std::to_string(s.ncclVersion) + "): " + what +
                         " failed: the connection to the peer broke" + why);
  return CC_ERROR(codeOf(r), "net plugin %s (NCCL v%d): %s failed (result %d)%s", nameOf(s), s.ncclVersion, what, r,
                  why.c_str());
}

#define CC_NCCL_CALL(slot, what, call)                                          \
  do {                                                                          \
    const int ccNcclResult_ = (call);                                           \
    if (ccNcclResult_ != 0) return pluginFailed((slot), ccNcclResult_, (what)); \
  } while (0)

// As CC_NCCL_CALL, and the comm is unusable afterwards.
#define CC_NCCL_COMM_CALL(comm, what, call)                      \
  do {                                                           \
    const int ccNcclResult_ = (call);                            \
    if (ccNcclResult_ != 0) {                                    \
      (comm)->failed = true;                                     \
      return pluginFailed(*(comm)->slot, ccNcclResult_, (what)); \
    }                                                            \
  } while (0)

Status brokenComm(const Comm* c) {
  return remoteFailure("net plugin " + c->slot->name + " (NCCL): the connection failed earlier");
}

template <class V>
Status runInit(NetPluginSlot& s) {
  CC_NCCL_CALL(s, "init", net<V>(s).init(ncclLogger));
  int n = 0;
  CC_NCCL_CALL(s, "devices", net<V>(s).devices(&n));
  if (n <= 0)
    return CC_ERROR(Status::kSystemError, "net plugin %s (NCCL v%d, %s) reports no network device here", nameOf(s),
                    s.ncclVersion, s.path.c_str());
  return kOk;
}

void warnNoSecretOnce(const NetPluginSlot& s) {
  static std::once_flag once;
  std::call_once(once, [&] {
    CC_WARN(
        "net plugin %s is a NCCL plugin: its connections carry no secret, so collcomm cannot check that a "
        "connection comes from a rank of this communicator (docs/net.md, Plugins)",
        nameOf(s));
  });
}

// A new comm around the plugin's, its headers registered; on failure the plugin's comm is closed.
template <class V>
Status wrap(const NetPluginSlot& s, bool isSend, void* plugin, void** out) {
  auto* c = new Comm;
  c->slot = &s;
  c->isSend = isSend;
  c->plugin = plugin;
  for (Request& r : c->req) r.comm = c;
  const int rc = net<V>(s).regMr(plugin, c->headers, sizeof(c->headers), CC_NCCL_PTR_HOST, &c->headersMr);
  if (rc != 0) {
    const Status st = pluginFailed(s, rc, "regMr of the message headers");
    (void)(isSend ? net<V>(s).closeSend(plugin) : net<V>(s).closeRecv(plugin));
    delete c;
    return st;
  }
  *out = c;
  return kOk;
}

// The registration covering [data, data + size): the caller's, else one made here on first use.
template <class V>
Status mrFor(Comm* c, void* data, size_t size, void* given, void** mhandle) {
  if (given != nullptr) {
    *mhandle = given;
    return kOk;
  }
  const char* p = static_cast<const char*>(data);
  for (const AutoMr& m : c->autoMrs) {
    if (p >= m.base && p + size <= m.base + m.size) {
      *mhandle = m.mhandle;
      return kOk;
    }
  }
  void* mh = nullptr;
  CC_NCCL_COMM_CALL(c, "regMr", net<V>(*c->slot).regMr(c->plugin, data, size, CC_NCCL_PTR_HOST, &mh));
  c->autoMrs.push_back({p, size, mh});
  *mhandle = mh;
  return kOk;
}

// Posts the waiting sends to the plugin in order, header then payload, until it takes no more.
template <class V>
Status progressSend(Comm* c) {
  const typename V::Net& n = net<V>(*c->slot);
  while (c->orderHead != c->orderTail) {
    const int i = c->order[c->orderHead % kRequests];
    Request& r = c->req[i];
    if (r.stage == 0) {
      void* q = nullptr;
      CC_NCCL_COMM_CALL(c, "isend", n.isend(c->plugin, &c->headers[i], sizeof(Header), kWireTag, c->headersMr, &q));
      if (q == nullptr) return kOk;
      r.headerReq = q;
      r.stage = r.size == 0 ? 2 : 1;
    }
    if (r.stage == 1) {
      void* mh = nullptr;
      CC_CHECK(mrFor<V>(c, r.data, r.size, r.mhandle, &mh));
      void* q = nullptr;
      CC_NCCL_COMM_CALL(c, "isend",
                        n.isend(c->plugin, r.data, static_cast<typename V::Size>(r.size), kWireTag, mh, &q));
      if (q == nullptr) return kOk;
      r.payloadReq = q;
      r.stage = 2;
    }
    ++c->orderHead;
  }
  return kOk;
}

// Receives headers and posts each message's payload irecv into the earliest posted irecv with its
// tag, until a header has no match yet or the plugin takes no more.
template <class V>
Status progressRecv(Comm* c) {
  const typename V::Net& n = net<V>(*c->slot);
  Header& in = c->headers[kRequests];
  for (;;) {
    if (!c->headerInValid) {
      if (c->headerInReq == nullptr) {
        void* buf = &in;
        typename V::Size size = sizeof(Header);
        int tag = kWireTag;
        void* mh = c->headersMr;
        void* q = nullptr;
        CC_NCCL_COMM_CALL(c, "irecv", n.irecv(c->plugin, 1, &buf, &size, &tag, &mh, &q));
        if (q == nullptr) return kOk;
        c->headerInReq = q;
      }
      int done = 0, size = 0;
      CC_NCCL_COMM_CALL(c, "test", n.test(c->headerInReq, &done, &size));
      if (!done) return kOk;
      c->headerInReq = nullptr;
      if (size != static_cast<int>(sizeof(Header))) {
        c->failed = true;
        return CC_ERROR(Status::kRemoteError,
                        "net plugin %s (NCCL): a message header of %d bytes arrived instead of %zu (the peer is "
                        "not collcomm's adapter, or the plugin broke message order)",
                        nameOf(*c->slot), size, sizeof(Header));
      }
      c->headerInValid = true;
    }
    Request* m = nullptr;
    for (Request& r : c->req)
      if (r.used && r.stage == 0 && r.tag == in.tag && (m == nullptr || r.seq < m->seq)) m = &r;
    if (m == nullptr) return kOk;
    if (in.size > m->size) {
      c->failed = true;
      return CC_ERROR(Status::kInternalError,
                      "net plugin %s (NCCL): a message of %llu bytes arrived for a receive of %zu bytes (tag %u)",
                      nameOf(*c->slot), static_cast<unsigned long long>(in.size), m->size, in.tag);
    }
    m->arrived = in.size;
    if (in.size == 0) {
      m->stage = 2;
      c->headerInValid = false;
      continue;
    }
    void* mh = nullptr;
    CC_CHECK(mrFor<V>(c, m->data, m->size, m->mhandle, &mh));
    void* buf = m->data;
    typename V::Size size = static_cast<typename V::Size>(in.size);
    int tag = kWireTag;
    void* q = nullptr;
    CC_NCCL_COMM_CALL(c, "irecv", n.irecv(c->plugin, 1, &buf, &size, &tag, &mh, &q));
    if (q == nullptr) return kOk;
    m->payloadReq = q;
    m->stage = 1;
    c->headerInValid = false;
  }
}

Request* freeRequest(Comm* c) {
  for (Request& r : c->req)
    if (!r.used) return &r;
  return nullptr;
}

// Tests a plugin request; *req becomes null once it is done.
template <class V>
Status testPlugin(Comm* c, void** req, int* size) {
  if (*req == nullptr) return kOk;
  int done = 0;
  CC_NCCL_COMM_CALL(c, "test", net<V>(*c->slot).test(*req, &done, size));
  if (done) *req = nullptr;
  return kOk;
}

// Tests the plugin requests of `r` itself: true once all its parts are done. A plugin error fails
// the connection (and makes this false).
template <class V>
bool ownDone(Request* r) {
  Comm* c = r->comm;
  if (r->headerReq != nullptr && !isOk(testPlugin<V>(c, &r->headerReq, nullptr))) return false;
  if (r->payloadReq != nullptr) {
    int got = 0;
    if (!isOk(testPlugin<V>(c, &r->payloadReq, &got))) return false;
  }
  if (!c->isSend && r->stage == 1 && r->payloadReq == nullptr) r->stage = 2;
  return r->stage == 2 && r->headerReq == nullptr && r->payloadReq == nullptr;
}

template <class V>
Status closeComm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (c == nullptr) return kOk;
  const typename V::Net& n = net<V>(*c->slot);
  for (const AutoMr& m : c->autoMrs) (void)n.deregMr(c->plugin, m.mhandle);
  if (c->headersMr != nullptr) (void)n.deregMr(c->plugin, c->headersMr);
  const int rc = c->isSend ? n.closeSend(c->plugin) : n.closeRecv(c->plugin);
  const NetPluginSlot& s = *c->slot;
  delete c;
  if (rc != 0) return pluginFailed(s, rc, "close");
  return kOk;
}

template <class Props>
void toInternalCommon(const Props& p, NetProperties* out) {
  memset(out, 0, sizeof(*out));
  snprintf(out->name, sizeof(out->name), "%s", p.name != nullptr ? p.name : "");
  snprintf(out->address, sizeof(out->address), "%s", p.pciPath != nullptr ? p.pciPath : "");
  out->guid = p.guid;
  out->speedMbps = p.speed;
  out->latencyUs = p.latency;
  out->maxComms = p.maxComms;
  out->maxRecvs = 1;               // grouped receives are not mapped
  out->maxMessageBytes = INT_MAX;  // test reports sizes as ints
  out->supportsDeviceMemory = (p.ptrSupport & CC_NCCL_PTR_CUDA) != 0;
}
void toInternal(const ccNcclNetProperties_v8_t& p, NetProperties* out) { toInternalCommon(p, out); }
void toInternal(const ccNcclNetProperties_v9_t& p, NetProperties* out) {
  toInternalCommon(p, out);
  if (p.maxP2pBytes != 0 && p.maxP2pBytes < out->maxMessageBytes) out->maxMessageBytes = p.maxP2pBytes;
}

template <class V, int S>
struct NcclOps {
  static const NetPluginSlot& s() { return netPluginSlot(S); }
  static const NetOpsV1 kOps;
};

template <class V, int S>
const NetOpsV1 NcclOps<V, S>::kOps = {
    .name = "Plugin",
    .version = kNetInterfaceVersion,
    .init = []() { return netPluginInitOnce(netPluginSlot(S), runInit<V>); },
    .devices =
        [](int* count) {
          CC_NCCL_CALL(s(), "devices", net<V>(s()).devices(count));
          return kOk;
        },
    .getProperties =
        [](int dev, NetProperties* props) {
          typename V::Props p{};
          CC_NCCL_CALL(s(), "getProperties", net<V>(s()).getProperties(dev, &p));
          toInternal(p, props);
          return kOk;
        },
    .listen =
        [](int dev, const NetSecret&, void* handle, void** listenComm) {
          warnNoSecretOnce(s());
          CC_NCCL_CALL(s(), "listen", net<V>(s()).listen(dev, handle, listenComm));
          return kOk;
        },
    .connect =
        [](int dev, const NetSecret&, void* handle, void** sendComm) {
          warnNoSecretOnce(s());
          void* plugin = nullptr;
          typename V::DevHandle* offload = nullptr;
          CC_NCCL_CALL(s(), "connect", net<V>(s()).connect(dev, handle, &plugin, &offload));
          *sendComm = nullptr;
          if (plugin == nullptr) return kOk;
          return wrap<V>(s(), true, plugin, sendComm);
        },
    // NCCL plugins have no way to give up a handshake: its state stays with the plugin.
    .abandonConnect = [](void*) {},
    .accept =
        [](void* listenComm, void** recvComm) {
          void* plugin = nullptr;
          typename V::DevHandle* offload = nullptr;
          CC_NCCL_CALL(s(), "accept", net<V>(s()).accept(listenComm, &plugin, &offload));
          *recvComm = nullptr;
          if (plugin == nullptr) return kOk;
          return wrap<V>(s(), false, plugin, recvComm);
        },
    .regMr =
        [](void* comm, void* data, size_t size, NetMemType type, void** mhandle) {
          auto* c = static_cast<Comm*>(comm);
          const int t = type == NetMemType::kDevice ? CC_NCCL_PTR_CUDA : CC_NCCL_PTR_HOST;
          CC_NCCL_CALL(s(), "regMr", net<V>(s()).regMr(c->plugin, data, size, t, mhandle));
          return kOk;
        },
    .deregMr =
        [](void* comm, void* mhandle) {
          CC_NCCL_CALL(s(), "deregMr", net<V>(s()).deregMr(static_cast<Comm*>(comm)->plugin, mhandle));
          return kOk;
        },
    .isend =
        [](void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request) {
          auto* c = static_cast<Comm*>(sendComm);
          *request = nullptr;
          if (c->failed) return brokenComm(c);
          if (size > static_cast<size_t>(INT_MAX))
            return CC_ERROR(Status::kInternalError, "net plugin %s (NCCL): a message of %zu bytes is over 2 GiB",
                            nameOf(s()), size);
          Request* r = freeRequest(c);
          if (r == nullptr) return kOk;
          const int i = static_cast<int>(r - c->req);
          *r = Request{};
          r->comm = c;
          r->used = true;
          r->data = const_cast<void*>(data);
          r->size = size;
          r->tag = tag;
          r->mhandle = mhandle;
          c->headers[i] = Header{tag, 0, size};
          c->order[c->orderTail++ % kRequests] = i;
          *request = r;
          return progressSend<V>(c);
        },
    .irecv =
        [](void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
           void** request) {
          auto* c = static_cast<Comm*>(recvComm);
          *request = nullptr;
          if (c->failed) return brokenComm(c);
          if (n != 1)
            return CC_ERROR(Status::kInternalError, "net plugin %s (NCCL): grouped receives (n = %d) are not mapped",
                            nameOf(s()), n);
          Request* r = freeRequest(c);
          if (r == nullptr) return kOk;
          *r = Request{};
          r->comm = c;
          r->used = true;
          r->seq = c->nextSeq++;
          r->data = data[0];
          r->size = sizes[0];
          r->tag = tags[0];
          r->mhandle = mhandles != nullptr ? mhandles[0] : nullptr;
          *request = r;
          return progressRecv<V>(c);
        },
    // A request that completed before its connection broke still reports done (the transport
    // harvests those before it fails the connection): its own plugin requests are tested first,
    // and the connection's failure fails only a request that has not completed.
    .test =
        [](void* request, bool* done, size_t* sizes) {
          auto* r = static_cast<Request*>(request);
          Comm* c = r->comm;
          *done = false;
          if (!ownDone<V>(r)) {
            if (c->failed) return brokenComm(c);
            CC_CHECK(c->isSend ? progressSend<V>(c) : progressRecv<V>(c));
            if (!ownDone<V>(r)) return r->comm->failed ? brokenComm(c) : kOk;
          }
          if (sizes != nullptr) sizes[0] = c->isSend ? r->size : r->arrived;
          r->used = false;
          *done = true;
          return kOk;
        },
    .farewell = nullptr,
    .peerFarewell = nullptr,
    .wholeSegmentBytes = nullptr,
    .closeSend = closeComm<V>,
    .closeRecv = closeComm<V>,
    .closeListen =
        [](void* listenComm) {
          CC_NCCL_CALL(s(), "closeListen", net<V>(s()).closeListen(listenComm));
          return kOk;
        },
};

template <int S>
using NcclOpsV8 = NcclOps<V8, S>;
template <int S>
using NcclOpsV9 = NcclOps<V9, S>;

}  // namespace

const NetOpsV1& ncclNetAdapter(int index) {
  return netPluginSlot(index).ncclVersion == 9 ? netPluginOpsOf<NcclOpsV9>(index) : netPluginOpsOf<NcclOpsV8>(index);
}

}  // namespace collcomm::detail
