// libfabric, loaded with dlopen("libfabric.so.1") the first time the OFI backend is used, so that
// collcomm runs (with the socket backend) where libfabric is not installed. Only the functions
// that are real symbols of the library are resolved; the rest of the fi_* API is static inlines
// over each object's ops table and needs no symbol. Setup tier.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/log.h"
#include "transport/net/net_ofi_internal.h"

namespace collcomm::detail::netofi {
namespace {

// The API version the backend is written against (fi_getinfo's first argument): 1.17, the
// version Debian 12 ships; later libraries serve it too.
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

std::once_flag g_once;
Lib g_lib{};
bool g_ok = false;
std::string g_why;

// libfabric before 1.18: its tcp provider completes an RMA read's response twice when the endpoint
// is closed or breaks while that response is arriving. The response's entry stays at the head of
// the endpoint's read queue while it is the current receive, and the flush reports it from both
// places, the second time after freeing it (null context, no flags); ofi_rxm reads that completion
// while it closes the connection (rxm_close_conn -> rxm_handle_comp_error) and dereferences the null
// context. That was the survivor's SIGSEGV in fi_close during ccCommAbort: its live peer's last
// steps were still arriving. Upstream fixed it in 1.18 (commit a74ea0fcd, "Suspicion of bug where
// RX entry is freed twice"). The only RMA reads the backend causes are rxm's rendezvous reads
// (messages over rxm's eager limit, 16 KiB), so it asks rxm for its write rendezvous instead,
// before libfabric reads its settings (the first fi_getinfo), unless the user set the variable.
// Where another part of the process initialised libfabric first, the setting comes too late and
// the defect stays possible.
void avoidReadRendezvous(uint32_t version) {
  if (version >= FI_VERSION(1, 18)) return;
  constexpr const char* kVar = "FI_OFI_RXM_USE_RNDV_WRITE";
  // Writing libfabric's setting, not reading one of ours: overwrite=0 keeps a value the user set.
  if (setenv(kVar, "1", 0) != 0) return;
  CC_INFO(kSubsysNet,
          "net/ofi: libfabric %u.%u: %s=1 unless set already (rxm's rendezvous by RMA writes: this tcp provider "
          "crashes closing an endpoint while a read response arrives)",
          FI_MAJOR(version), FI_MINOR(version), kVar);
}

template <typename F>
bool resolve(void* dl, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(dl, name));
  if (*out == nullptr) g_why = std::string("libfabric.so.1 has no symbol ") + name;
  return *out != nullptr;
}

void load() {
  void* dl = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* err = dlerror();
    g_why = std::string("libfabric.so.1 could not be loaded (") + (err != nullptr ? err : "unknown error") +
            "); install libfabric1 (Debian) or libfabric (RPM)";
    return;
  }
  if (!resolve(dl, "fi_getinfo", &g_lib.getinfo) || !resolve(dl, "fi_freeinfo", &g_lib.freeinfo) ||
      !resolve(dl, "fi_dupinfo", &g_lib.dupinfo) || !resolve(dl, "fi_fabric", &g_lib.fabric) ||
      !resolve(dl, "fi_strerror", &g_lib.strerror) || !resolve(dl, "fi_version", &g_lib.version)) {
    dlclose(dl);
    return;
  }
  const uint32_t v = g_lib.version();
  if (v < kApiVersion) {
    char buf[160];
    snprintf(buf, sizeof(buf), "libfabric %u.%u is older than 1.17, the oldest the OFI backend uses", FI_MAJOR(v),
             FI_MINOR(v));
    g_why = buf;
    dlclose(dl);
    return;
  }
  CC_INFO(kSubsysNet, "net/ofi: loaded libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
  avoidReadRendezvous(v);
  g_ok = true;
}

}  // namespace

const Lib* lib(std::string* why) {
  std::call_once(g_once, load);
  if (!g_ok && why != nullptr) *why = g_why;
  return g_ok ? &g_lib : nullptr;
}

uint32_t apiVersion() { return kApiVersion; }

std::string fiError(int err) {
  const Lib* l = lib(nullptr);
  if (err < 0) err = -err;
  std::string s = l != nullptr ? l->strerror(err) : "libfabric error";
  return s + " (" + std::to_string(err) + ")";
}

}  // namespace collcomm::detail::netofi
