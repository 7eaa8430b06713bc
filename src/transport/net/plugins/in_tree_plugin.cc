// A built-in backend (net.h) exported as a plugin of collcomm's public ABI (include/collcomm_net.h):
// compiled once per backend (CMakeLists.txt here: libcollcomm-net-socket.so, libcollcomm-net-ofi.so)
// with CC_IN_TREE_NET naming the backend's accessor. It proves the ABI carries everything the
// transport needs: the NET tests run over these libraries loaded by COLLCOMM_NET_PLUGIN.
//
// The library holds its own copy of the backend and of what it uses (logging, settings, the error
// sentences), hidden behind a version script that exports ccNetPlugin_v1 only; its sentences reach
// collcomm through lastError, as any plugin's do. Its copy of the log reads COLLCOMM_DEBUG itself,
// so the logger given to init is not needed.
#include <cstdio>
#include <cstring>

#include "collcomm_net.h"
#include "common/status.h"
#include "transport/net/net.h"

#ifndef CC_IN_TREE_NET
#error "CC_IN_TREE_NET must name the backend accessor (socketNet or ofiNet)"
#endif

namespace collcomm::detail {
namespace {

const NetOpsV1& ops() { return CC_IN_TREE_NET(); }

NetSecret toInternal(const ccNetSecret_v1_t* s) { return NetSecret{{s->words[0], s->words[1]}}; }

ccResult_t init(ccNetLogger_t) { return toResult(ops().init()); }
ccResult_t devices(int* count) { return toResult(ops().devices(count)); }

ccResult_t getProperties(int dev, ccNetProperties_v1_t* out) {
  NetProperties p{};
  const Status s = ops().getProperties(dev, &p);
  if (!isOk(s)) return toResult(s);
  memset(out, 0, sizeof(*out));
  static_assert(sizeof(out->name) == sizeof(p.name) && sizeof(out->address) == sizeof(p.address));
  memcpy(out->name, p.name, sizeof(p.name));
  memcpy(out->address, p.address, sizeof(p.address));
  out->guid = p.guid;
  out->speedMbps = p.speedMbps;
  out->latencyUs = p.latencyUs;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
  out->maxMessageBytes = p.maxMessageBytes;
  out->memTypes = CC_NET_MEM_HOST | (p.supportsDeviceMemory ? CC_NET_MEM_DEVICE : 0);
  return ccSuccess;
}

ccResult_t listen(int dev, const ccNetSecret_v1_t* secret, void* handle, void** listenComm) {
  return toResult(ops().listen(dev, toInternal(secret), handle, listenComm));
}

ccResult_t connect(int dev, const ccNetSecret_v1_t* secret, void* handle, void** sendComm) {
  return toResult(ops().connect(dev, toInternal(secret), handle, sendComm));
}

void abandonConnect(void* handle) { ops().abandonConnect(handle); }
ccResult_t accept(void* listenComm, void** recvComm) { return toResult(ops().accept(listenComm, recvComm)); }

ccResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return toResult(ops().regMr(comm, data, size, static_cast<NetMemType>(type), mhandle));
}

ccResult_t deregMr(void* comm, void* mhandle) { return toResult(ops().deregMr(comm, mhandle)); }

ccResult_t isend(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request) {
  return toResult(ops().isend(sendComm, data, size, tag, mhandle, request));
}

ccResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                 void** request) {
  return toResult(ops().irecv(recvComm, n, data, sizes, tags, mhandles, request));
}

ccResult_t test(void* request, int* done, size_t* sizes) {
  bool d = false;
  const Status s = ops().test(request, &d, sizes);
  *done = d ? 1 : 0;
  return toResult(s);
}

ccResult_t farewell(void* recvComm, uint32_t word) { return toResult(ops().farewell(recvComm, word)); }
int peerFarewell(void* sendComm, uint32_t* word) { return ops().peerFarewell(sendComm, word) ? 1 : 0; }
size_t wholeSegmentBytes(int dev, size_t maxBytes, size_t align) {
  return ops().wholeSegmentBytes(dev, maxBytes, align);
}

ccResult_t closeSend(void* comm) { return toResult(ops().closeSend(comm)); }
ccResult_t closeRecv(void* comm) { return toResult(ops().closeRecv(comm)); }
ccResult_t closeListen(void* comm) { return toResult(ops().closeListen(comm)); }

void lastError(char* buf, size_t size) {
  if (size > 0) snprintf(buf, size, "%s", threadLastError().c_str());
}

}  // namespace
}  // namespace collcomm::detail

namespace cd = collcomm::detail;

// The optional members are given only where this backend has them.
extern "C" __attribute__((visibility("default"))) const ccNet_v1_t ccNetPlugin_v1 = {
    .name = cd::ops().name,
    .version = CC_NET_PLUGIN_VERSION,
    .init = cd::init,
    .devices = cd::devices,
    .getProperties = cd::getProperties,
    .listen = cd::listen,
    .connect = cd::connect,
    .abandonConnect = cd::abandonConnect,
    .accept = cd::accept,
    .regMr = cd::regMr,
    .deregMr = cd::deregMr,
    .isend = cd::isend,
    .irecv = cd::irecv,
    .test = cd::test,
    .farewell = cd::ops().farewell != nullptr ? cd::farewell : nullptr,
    .peerFarewell = cd::ops().peerFarewell != nullptr ? cd::peerFarewell : nullptr,
    .wholeSegmentBytes = cd::ops().wholeSegmentBytes != nullptr ? cd::wholeSegmentBytes : nullptr,
    .closeSend = cd::closeSend,
    .closeRecv = cd::closeRecv,
    .closeListen = cd::closeListen,
    .lastError = cd::lastError,
};
