// A comm's libfabric objects: its own domain, address vector, completion queue and reliable-
// datagram endpoint on the device's fabric, and the memory registrations the provider asks for.
//
// One domain per comm: the net contract lets different comms run on different threads at once and
// one comm on one thread at a time, which is exactly libfabric's FI_THREAD_DOMAIN, so no lock is
// taken on the data path. It costs an endpoint (for tcp a listening port, for verbs a queue pair)
// per connection; a shared endpoint per device is the step for clusters with thousands of peers.
//
// Registration (FI_MR_LOCAL providers): the caller's regMr handles are used where given; a buffer
// sent or received without one is registered for that one operation (correct whatever the caller
// does with its memory afterwards, and slow: the NET transport registers its FIFOs). Setup tier.
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"

namespace collcomm::detail::netofi {
namespace {

constexpr size_t kCqEntries = 4 * kNetMaxRequests;

// Opening and closing domains on a fabric shared by comms on different threads: one at a time.
std::mutex g_openMu;

// Caller holds g_openMu. The endpoint first: it holds references on the CQ and AV.
void closeObjects(Endpoint* e) {
  if (e->ep != nullptr) fi_close(&e->ep->fid);
  for (Mr* m : e->owned) {
    fi_close(&m->mr->fid);
    delete m;
  }
  e->owned.clear();
  if (e->cq != nullptr) fi_close(&e->cq->fid);
  if (e->av != nullptr) fi_close(&e->av->fid);
  if (e->domain != nullptr) fi_close(&e->domain->fid);
  e->ep = nullptr;
  e->cq = nullptr;
  e->av = nullptr;
  e->domain = nullptr;
}

}  // namespace

Status openEndpoint(Device* dev, Endpoint* e) {
  std::lock_guard<std::mutex> lock(g_openMu);
  e->dev = dev;
  e->needsMr = (dev->info->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  const char* what = "fi_domain";
  int rc = fi_domain(dev->fabric, dev->info, &e->domain, nullptr);
  if (rc == 0) {
    what = "fi_av_open";
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    rc = fi_av_open(e->domain, &av, &e->av, nullptr);
  }
  if (rc == 0) {
    what = "fi_cq_open";
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_TAGGED;
    cq.size = kCqEntries;
    cq.wait_obj = FI_WAIT_NONE;  // polled by test(); nothing ever waits on it
    rc = fi_cq_open(e->domain, &cq, &e->cq, nullptr);
  }
  if (rc == 0) {
    what = "fi_endpoint";
    rc = fi_endpoint(e->domain, dev->info, &e->ep, nullptr);
  }
  if (rc == 0) {
    what = "fi_ep_bind(av)";
    rc = fi_ep_bind(e->ep, &e->av->fid, 0);
  }
  if (rc == 0) {
    what = "fi_ep_bind(cq)";
    rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
  }
  if (rc == 0) {
    what = "fi_enable";
    rc = fi_enable(e->ep);
  }
  if (rc != 0) {
    const std::string err = fiError(rc);
    closeObjects(e);
    return CC_ERROR(Status::kSystemError, "net/ofi: cannot open an endpoint on %s %s: %s failed: %s",
                    dev->provider.c_str(), dev->props.name, what, err.c_str());
  }
  unsigned char name[kMaxNameBytes];
  size_t len = sizeof(name);
  if (fi_getname(&e->ep->fid, name, &len) == 0) {
    char text[128] = {};
    size_t tlen = sizeof(text);
    fi_av_straddr(e->av, name, text, &tlen);
    e->name = text;
  }
  return kOk;
}

void closeEndpoint(Endpoint* e) {
  std::lock_guard<std::mutex> lock(g_openMu);
  closeObjects(e);
}

Status endpointName(Endpoint* e, void* name, size_t* len) {
  const int rc = fi_getname(&e->ep->fid, name, len);
  if (rc != 0)
    return CC_ERROR(Status::kSystemError, "net/ofi: this endpoint's address does not fit in %zu bytes (%s)",
                    static_cast<size_t>(kMaxNameBytes), fiError(rc).c_str());
  return kOk;
}

Status insertPeer(Endpoint* e, const void* name, fi_addr_t* addr, std::string* text) {
  char buf[128] = {};
  size_t tlen = sizeof(buf);
  fi_av_straddr(e->av, name, buf, &tlen);
  *text = buf;
  const int n = fi_av_insert(e->av, name, 1, addr, 0, nullptr);
  if (n != 1)
    return CC_ERROR(Status::kRemoteError, "net/ofi: cannot add the peer %s to the address vector: %s", buf,
                    fiError(n < 0 ? n : -FI_EINVAL).c_str());
  return kOk;
}

Status registerMr(Endpoint* e, void* data, size_t size, NetMemType type, Mr** out) {
  auto* m = new Mr();
  m->base = static_cast<char*>(data);
  m->size = size;
  if (type == NetMemType::kDevice && (e->dev->info->caps & FI_HMEM) == 0) {
    delete m;
    return CC_ERROR(Status::kInternalError, "net/ofi: provider %s cannot send from device memory",
                    e->dev->provider.c_str());
  }
  fi_mr_attr attr{};
  iovec iov{data, size};
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = FI_SEND | FI_RECV;
  attr.iface = type == NetMemType::kDevice ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  // Without FI_MR_PROV_KEY the caller picks the keys, unique within the domain.
  static std::atomic<uint64_t> nextKey{1};
  if ((e->dev->info->domain_attr->mr_mode & FI_MR_PROV_KEY) == 0) attr.requested_key = nextKey.fetch_add(1);
  const int rc = fi_mr_regattr(e->domain, &attr, 0, &m->mr);
  if (rc != 0) {
    delete m;
    return CC_ERROR(Status::kSystemError, "net/ofi: cannot register %zu bytes with %s: %s", size,
                    e->dev->provider.c_str(), fiError(rc).c_str());
  }
  *out = m;
  return kOk;
}

void deregisterMr(Endpoint*, Mr* m) {
  if (m == nullptr) return;
  fi_close(&m->mr->fid);
  delete m;
}

Status descFor(Endpoint* e, void* data, size_t size, Mr* given, void** desc, Mr** made) {
  *desc = nullptr;
  *made = nullptr;
  if (given != nullptr) {
    *desc = fi_mr_desc(given->mr);
    return kOk;
  }
  if (!e->needsMr || size == 0) return kOk;
  CC_CHECK(registerMr(e, data, size, NetMemType::kHost, made));
  *desc = fi_mr_desc((*made)->mr);
  return kOk;
}

}  // namespace collcomm::detail::netofi
