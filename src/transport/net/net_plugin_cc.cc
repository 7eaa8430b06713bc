// The adapter from collcomm's public net plugin ABI (include/collcomm_net.h, ccNet_v1_t) to the
// internal interface (net.h, NetOpsV1), and the backend of a load that failed. The two describe the
// same contract, so the adapter only converts types: comms, handles and requests are the plugin's
// own pointers, results become Status with the plugin's sentence (lastError), and the plugin's log
// lines go to collcomm's log.
//
// Tiers: as the plugin's functions (isend/irecv/test are the data path: no allocation here).
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "transport/net/net_plugin.h"

namespace collcomm::detail {
namespace {

void pluginLog(ccNetLogLevel_t level, const char* message) {
  const LogLevel l = level == CC_NET_LOG_WARN   ? LogLevel::kWarn
                     : level == CC_NET_LOG_INFO ? LogLevel::kInfo
                                                : LogLevel::kTrace;
  CC_LOG(l, kSubsysNet, "net plugin: %s", message != nullptr ? message : "");
}

Status codeOf(ccResult_t r) {
  switch (r) {
    case ccSystemError:
    case ccInternalError:
    case ccInvalidArgument:
    case ccInvalidUsage:
    case ccRemoteError:
    case ccTimeout:
      return static_cast<Status>(r);
    default:
      return Status::kInternalError;
  }
}

// The plugin's failure `r` of `what`, with its sentence, recorded as the error of this thread.
Status failed(const NetPluginSlot& s, ccResult_t r, const char* what) {
  char why[512] = {};
  s.cc->lastError(why, sizeof(why));
  why[sizeof(why) - 1] = '\0';
  return CC_ERROR(codeOf(r), "net plugin %s: %s failed: %s", s.name.c_str(), what,
                  why[0] != '\0' ? why : "(the plugin gave no reason)");
}

#define CC_PLUGIN_CALL(slot, what, call)                                              \
  do {                                                                                \
    const ccResult_t ccPluginResult_ = (call);                                        \
    if (ccPluginResult_ != ccSuccess) return failed((slot), ccPluginResult_, (what)); \
  } while (0)

Status runInit(NetPluginSlot& s) {
  CC_PLUGIN_CALL(s, "init", s.cc->init(pluginLog));
  int n = 0;
  CC_PLUGIN_CALL(s, "devices", s.cc->devices(&n));
  if (n <= 0)
    return CC_ERROR(Status::kSystemError, "net plugin %s (%s) reports no network device here", s.name.c_str(),
                    s.path.c_str());
  return kOk;
}

void toInternal(const ccNetProperties_v1_t& p, NetProperties* out) {
  memset(out, 0, sizeof(*out));
  snprintf(out->name, sizeof(out->name), "%.*s", static_cast<int>(sizeof(p.name)), p.name);
  snprintf(out->address, sizeof(out->address), "%.*s", static_cast<int>(sizeof(p.address)), p.address);
  out->guid = p.guid;
  out->speedMbps = p.speedMbps;
  out->latencyUs = p.latencyUs;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
  out->maxMessageBytes = p.maxMessageBytes;
  out->supportsDeviceMemory = (p.memTypes & CC_NET_MEM_DEVICE) != 0;
}

ccNetSecret_v1_t toCc(const NetSecret& s) { return ccNetSecret_v1_t{{s.words[0], s.words[1]}}; }

template <int S>
struct CcOps {
  static NetPluginSlot& s() { return netPluginSlot(S); }
  static const ccNet_v1_t& p() { return *netPluginSlot(S).cc; }
  static const NetOpsV1 kOps;
};

template <int S>
const NetOpsV1 CcOps<S>::kOps = {
    .name = "Plugin",
    .version = kNetInterfaceVersion,
    .init = []() { return netPluginInitOnce(s(), runInit); },
    .devices =
        [](int* count) {
          CC_PLUGIN_CALL(s(), "devices", p().devices(count));
          return kOk;
        },
    .getProperties =
        [](int dev, NetProperties* props) {
          ccNetProperties_v1_t cp{};
          CC_PLUGIN_CALL(s(), "getProperties", p().getProperties(dev, &cp));
          toInternal(cp, props);
          return kOk;
        },
    .listen =
        [](int dev, const NetSecret& secret, void* handle, void** listenComm) {
          const ccNetSecret_v1_t cs = toCc(secret);
          CC_PLUGIN_CALL(s(), "listen", p().listen(dev, &cs, handle, listenComm));
          return kOk;
        },
    .connect =
        [](int dev, const NetSecret& secret, void* handle, void** sendComm) {
          const ccNetSecret_v1_t cs = toCc(secret);
          CC_PLUGIN_CALL(s(), "connect", p().connect(dev, &cs, handle, sendComm));
          return kOk;
        },
    .abandonConnect = [](void* handle) { p().abandonConnect(handle); },
    .accept =
        [](void* listenComm, void** recvComm) {
          CC_PLUGIN_CALL(s(), "accept", p().accept(listenComm, recvComm));
          return kOk;
        },
    .regMr =
        [](void* comm, void* data, size_t size, NetMemType type, void** mhandle) {
          CC_PLUGIN_CALL(s(), "regMr", p().regMr(comm, data, size, static_cast<int>(type), mhandle));
          return kOk;
        },
    .deregMr =
        [](void* comm, void* mhandle) {
          CC_PLUGIN_CALL(s(), "deregMr", p().deregMr(comm, mhandle));
          return kOk;
        },
    .isend =
        [](void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request) {
          CC_PLUGIN_CALL(s(), "isend", p().isend(sendComm, data, size, tag, mhandle, request));
          return kOk;
        },
    .irecv =
        [](void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
           void** request) {
          CC_PLUGIN_CALL(s(), "irecv", p().irecv(recvComm, n, data, sizes, tags, mhandles, request));
          return kOk;
        },
    .test =
        [](void* request, bool* done, size_t* sizes) {
          int d = 0;
          CC_PLUGIN_CALL(s(), "test", p().test(request, &d, sizes));
          *done = d != 0;
          return kOk;
        },
    .farewell =
        [](void* recvComm, uint32_t word) {
          if (p().farewell == nullptr) return kOk;
          CC_PLUGIN_CALL(s(), "farewell", p().farewell(recvComm, word));
          return kOk;
        },
    .peerFarewell = [](void* sendComm,
                       uint32_t* word) { return p().peerFarewell != nullptr && p().peerFarewell(sendComm, word) != 0; },
    .wholeSegmentBytes =
        [](int dev, size_t maxBytes, size_t align) {
          return p().wholeSegmentBytes != nullptr ? p().wholeSegmentBytes(dev, maxBytes, align) : size_t{0};
        },
    .closeSend =
        [](void* comm) {
          CC_PLUGIN_CALL(s(), "closeSend", p().closeSend(comm));
          return kOk;
        },
    .closeRecv =
        [](void* comm) {
          CC_PLUGIN_CALL(s(), "closeRecv", p().closeRecv(comm));
          return kOk;
        },
    .closeListen =
        [](void* comm) {
          CC_PLUGIN_CALL(s(), "closeListen", p().closeListen(comm));
          return kOk;
        },
};

// A load that failed: init says why (the loader's sentence); no devices. The transport calls init
// before anything else, so no other function is reached.
template <int S>
struct FailedOps {
  static const NetOpsV1 kOps;
};

template <int S>
const NetOpsV1 FailedOps<S>::kOps = {
    .name = "Plugin",
    .version = kNetInterfaceVersion,
    .init =
        []() {
          const NetPluginSlot& s = netPluginSlot(S);
          return CC_ERROR(s.loadCode, "%s", s.loadError.c_str());
        },
    .devices =
        [](int* count) {
          *count = 0;
          return kOk;
        },
    .getProperties = nullptr,
    .listen = nullptr,
    .connect = nullptr,
    .abandonConnect = nullptr,
    .accept = nullptr,
    .regMr = nullptr,
    .deregMr = nullptr,
    .isend = nullptr,
    .irecv = nullptr,
    .test = nullptr,
    .farewell = nullptr,
    .peerFarewell = nullptr,
    .wholeSegmentBytes = nullptr,
    .closeSend = nullptr,
    .closeRecv = nullptr,
    .closeListen = nullptr,
};

}  // namespace

const NetOpsV1& ccNetAdapter(int index) { return netPluginOpsOf<CcOps>(index); }
const NetOpsV1& failedNetAdapter(int index) { return netPluginOpsOf<FailedOps>(index); }

}  // namespace collcomm::detail
