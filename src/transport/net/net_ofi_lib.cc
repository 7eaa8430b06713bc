// libfabric, loaded with dlopen("libfabric.so.1") the first time the OFI backend is used, so that
// collcomm runs (with the socket backend) where libfabric is not installed. Only the functions
// that are real symbols of the library are resolved; the rest of the fi_* API is static inlines
// over each object's ops table and needs no symbol. Setup tier.
#include <dirent.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/log.h"
#include "common/params.h"
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

// Settings of libfabric's rxm layer, which libfabric reads from the environment when it first
// initialises (the first fi_getinfo, after this): set here, before that, each unless the user set
// it (setenv's overwrite=0; this writes libfabric's settings and reads none of ours). Where another
// part of the process initialised libfabric first, they come too late.
//
// FI_OFI_RXM_USE_RNDV_WRITE=1, libfabric before 1.18: its tcp provider completes an RMA read's
// response twice when the endpoint is closed or breaks while that response is arriving. The
// response's entry stays at the head of the endpoint's read queue while it is the current
// receive, and the flush reports it from both places, the second time after freeing it (null
// context, no flags); ofi_rxm reads that completion while it closes the connection
// (rxm_close_conn -> rxm_handle_comp_error) and dereferences the null context. That was the
// survivor's SIGSEGV in fi_close during ccCommAbort: its live peer's last steps were still
// arriving. Upstream fixed it in 1.18 (commit a74ea0fcd, "Suspicion of bug where RX entry is
// freed twice"). The only RMA reads the backend causes are rxm's rendezvous reads, so rxm is asked
// for its write rendezvous instead (messages over the eager limit below).
//
// FI_OFI_RXM_EAGER_LIMIT=kEagerLimit: rxm moves a message over its eager limit (16 KiB) by
// rendezvous, a round trip of control messages before the data moves, each needing the other
// process's progress; the NET transport's Simple steps (128 KiB) went that way, and a 16 MiB
// allreduce between two processes moved 0.1-0.15 GB/s (docs/lab/2026-11-27.md). Sent eagerly they
// stream: over tcp rxm sends from the caller's buffer and the receiver reads into the posted
// buffer (a message that arrives before its receive is copied once from a buffer rxm allocates).
// Providers that want registered local buffers (verbs) ignore the setting.
constexpr size_t kEagerLimit = size_t{1} << 20;

// FI_OFI_RXM_BUFFER_SIZE=kBounceBytes, over tcp only: rxm gives every endpoint pools of bounce
// buffers of this size (grown 1024 buffers at a time, 5-6 such chunks per endpoint here), and
// closing an endpoint unmaps them, at a cost that grows with the size. At the default 16 KiB that
// is 70-100 MiB per endpoint and 6-14 ms of CPU in fi_close (munmap) per endpoint; a rank of a 3-rank ring closes 6, so
// ccCommAbort spent 50-90 ms of CPU in libfabric and, under a CPU share of a tenth (CI's loaded sanitizer stage), 1.5 s
// of wall clock. It waits on nothing: the thread was runnable the whole time (/proc/thread-self/schedstat: 10 ms
// running and 40-60 ms waiting for a CPU per close with four busy loops beside it). At 1 KiB a close takes about 1 ms
// of CPU and the abort 20-30 ms. Over tcp the bounce buffers only carry messages that arrive before their receive is
// posted (a larger one gets a buffer of its own, malloc) and messages up to this size sent with inject; steps go
// eagerly from and into the caller's buffers up to kEagerLimit whatever this is (rxm takes its eager limit from
// FI_OFI_RXM_EAGER_LIMIT over tcp). Over verbs this size is also rxm's eager limit, so it is left alone where verbs may
// be chosen: a provider other than tcp asked for, or none asked for on a host with RDMA devices.
constexpr size_t kBounceBytes = 1024;

bool hostHasRdmaDevices() {
  DIR* d = opendir("/sys/class/infiniband");
  if (d == nullptr) return false;
  bool any = false;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') any = true;
  closedir(d);
  return any;
}

bool rxmOverTcpOnly() {
  const std::string asked = paramStr(Param::kOfiProvider);
  if (!asked.empty()) return asked.rfind("tcp", 0) == 0;
  return !hostHasRdmaDevices();
}

void tuneRxm(uint32_t version) {
  if (version < FI_VERSION(1, 18) && setenv("FI_OFI_RXM_USE_RNDV_WRITE", "1", 0) == 0)
    CC_INFO(kSubsysNet,
            "net/ofi: libfabric %u.%u: FI_OFI_RXM_USE_RNDV_WRITE=1 unless set already (this tcp provider crashes "
            "closing an endpoint while a rendezvous read's response arrives)",
            FI_MAJOR(version), FI_MINOR(version));
  const std::string eager = std::to_string(kEagerLimit);
  if (setenv("FI_OFI_RXM_EAGER_LIMIT", eager.c_str(), 0) == 0)
    CC_INFO(kSubsysNet, "net/ofi: FI_OFI_RXM_EAGER_LIMIT=%s unless set already (steps sent eagerly)", eager.c_str());
  const std::string bounce = std::to_string(kBounceBytes);
  if (rxmOverTcpOnly() && setenv("FI_OFI_RXM_BUFFER_SIZE", bounce.c_str(), 0) == 0)
    CC_INFO(kSubsysNet, "net/ofi: FI_OFI_RXM_BUFFER_SIZE=%s unless set already (small bounce-buffer pools)",
            bounce.c_str());
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
  tuneRxm(v);
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
