// The net plugin loader: COLLCOMM_NET_PLUGIN names a library, which is found, opened, checked and
// handed to the adapter of its kind (net_plugin.h). The one place that decides how a plugin is
// searched and what makes it acceptable.
//
// Search: a value with a '/' is opened as that path; otherwise dlopen's usual search runs first
// (LD_LIBRARY_PATH, the RUNPATH of the program, the linker cache, the system folders), then the
// folder of the library that holds collcomm (libcollcomm.so, or the program it is linked into).
// Symbols, in order: ccNetPlugin_v1 (collcomm's ABI, include/collcomm_net.h), ncclNetPlugin_v9,
// ncclNetPlugin_v8 (NCCL's, newest first: a library usually exports several).
// Every failure is a sentence with what to do, returned by the backend's init, never a crash.
//
// Tier: setup (once per distinct setting, under a mutex).
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstring>
#include <string>

#include "common/log.h"
#include "common/params.h"
#include "transport/net/net_plugin.h"

namespace collcomm::detail {
namespace {

struct Slots {
  std::mutex mutex;
  int used = 0;
  NetPluginSlot slot[kNetPluginSlots];
  const NetOpsV1* ops[kNetPluginSlots] = {};
};

// Never destroyed: loaded plugins and their slots live as long as the process (net_plugin.h).
Slots& slots() {
  static Slots* s = new Slots;
  return *s;
}

std::string dlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// The folder of the module this code is in ("" when unknown), with a trailing '/'.
std::string collcommFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&netPluginFileName), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string file = info.dli_fname;
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash + 1);
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

void fail(NetPluginSlot* s, Status code, const std::string& sentence) {
  s->loadCode = code;
  s->loadError = sentence;
}

// Opens the library: on success *handle and s->path; else the slot's sentence.
void* openLibrary(NetPluginSlot* s) {
  const std::string file = netPluginFileName(s->setting);
  const std::string quoted = "COLLCOMM_NET_PLUGIN=" + s->setting;
  if (file.find('/') != std::string::npos) {
    if (!fileExists(file)) {
      fail(s, Status::kInvalidUsage, quoted + ": the file " + file + " does not exist");
      return nullptr;
    }
    void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
      fail(s, Status::kInvalidUsage,
           quoted + ": " + file + " is not a shared library this process can load (" + dlError() + ")");
    else
      s->path = file;
    return h;
  }
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) {
    s->path = file;
    return h;
  }
  const std::string firstError = dlError();
  const std::string folder = collcommFolder();
  const std::string beside = folder + file;
  if (!folder.empty() && fileExists(beside)) {
    h = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr)
      fail(s, Status::kInvalidUsage,
           quoted + ": " + beside + " is not a shared library this process can load (" + dlError() + ")");
    else
      s->path = beside;
    return h;
  }
  // A file found by the search that failed to load says so in dlopen's own words.
  const bool notFound = firstError.find("No such file") != std::string::npos;
  fail(s, Status::kInvalidUsage,
       quoted + ": " +
           (notFound ? "no library " + file + " was found (searched: dlopen's search path, then " +
                           (folder.empty() ? std::string("collcomm's folder, unknown") : folder) +
                           "); give a path, or put it on LD_LIBRARY_PATH"
                     : file + " could not be loaded (" + firstError + ")"));
  return nullptr;
}

// Names of NCCL's other versions a library may export, for the sentence when v8 is missing.
std::string otherNcclVersions(void* h) {
  std::string found;
  for (int v = 2; v <= 12; ++v) {
    if (v == 8 || v == 9) continue;
    const std::string sym = "ncclNetPlugin_v" + std::to_string(v);
    if (dlsym(h, sym.c_str()) != nullptr) found += (found.empty() ? "" : ", ") + sym;
  }
  return found;
}

// Fills the slot from its setting; the slot's ops are chosen by what was found.
const NetOpsV1& load(int index) {
  NetPluginSlot* s = &slots().slot[index];
  void* h = openLibrary(s);
  if (h == nullptr) return failedNetAdapter(index);
  const std::string quoted =
      "COLLCOMM_NET_PLUGIN=" + s->setting + (s->path != s->setting ? " (" + s->path + ")" : std::string());
  if (auto* cc = static_cast<const ccNet_v1_t*>(dlsym(h, CC_NET_PLUGIN_SYMBOL))) {
    if (cc->version != CC_NET_PLUGIN_VERSION) {
      fail(s, Status::kInvalidUsage,
           quoted + ": its " CC_NET_PLUGIN_SYMBOL " says version " + std::to_string(cc->version) +
               ", and this collcomm supports version " + std::to_string(CC_NET_PLUGIN_VERSION) +
               " only (rebuild the plugin against this collcomm's collcomm_net.h)");
      return failedNetAdapter(index);
    }
    const bool complete = cc->init && cc->devices && cc->getProperties && cc->listen && cc->connect &&
                          cc->abandonConnect && cc->accept && cc->regMr && cc->deregMr && cc->isend && cc->irecv &&
                          cc->test && cc->closeSend && cc->closeRecv && cc->closeListen && cc->lastError;
    if (!complete) {
      fail(s, Status::kInvalidUsage,
           quoted + ": its " CC_NET_PLUGIN_SYMBOL
                    " leaves a required function null (only farewell, peerFarewell and "
                    "wholeSegmentBytes are optional)");
      return failedNetAdapter(index);
    }
    s->cc = cc;
    s->name = cc->name != nullptr ? cc->name : s->path;
    CC_INFO(kSubsysNet | kSubsysInit, "net plugin %s (collcomm ABI v%d) loaded from %s", cc->name ? cc->name : "?",
            cc->version, s->path.c_str());
    return ccNetAdapter(index);
  }
  const auto takeNccl = [&](const auto* nccl, int version, const char* symbol) -> const NetOpsV1& {
    const bool complete = nccl->init && nccl->devices && nccl->getProperties && nccl->listen && nccl->connect &&
                          nccl->accept && nccl->regMr && nccl->deregMr && nccl->isend && nccl->irecv && nccl->test &&
                          nccl->closeSend && nccl->closeRecv && nccl->closeListen;
    if (!complete) {
      fail(s, Status::kInvalidUsage, quoted + ": its " + symbol + " leaves a required function null");
      return failedNetAdapter(index);
    }
    s->nccl = nccl;
    s->ncclVersion = version;
    s->name = nccl->name != nullptr ? nccl->name : s->path;
    CC_INFO(kSubsysNet | kSubsysInit, "net plugin %s (NCCL net v%d) loaded from %s", s->name.c_str(), version,
            s->path.c_str());
    return ncclNetAdapter(index);
  };
  if (auto* nccl = static_cast<const ccNcclNet_v9_t*>(dlsym(h, CC_NCCL_NET_SYMBOL_V9)))
    return takeNccl(nccl, 9, CC_NCCL_NET_SYMBOL_V9);
  if (auto* nccl = static_cast<const ccNcclNet_v8_t*>(dlsym(h, CC_NCCL_NET_SYMBOL_V8)))
    return takeNccl(nccl, 8, CC_NCCL_NET_SYMBOL_V8);
  const std::string others = otherNcclVersions(h);
  fail(s, Status::kInvalidUsage,
       quoted +
           ": the library exports none of " CC_NET_PLUGIN_SYMBOL ", " CC_NCCL_NET_SYMBOL_V9
           " and " CC_NCCL_NET_SYMBOL_V8 +
           (others.empty() ? std::string(" (is it a net plugin?)")
                           : " (it has " + others + ", NCCL versions this collcomm does not load)"));
  return failedNetAdapter(index);
}

}  // namespace

std::string netPluginFileName(const std::string& setting) {
  if (setting.find('/') != std::string::npos || setting.find(".so") != std::string::npos) return setting;
  return "libcollcomm-net-" + setting + ".so";
}

NetPluginSlot& netPluginSlot(int index) { return slots().slot[index]; }

const NetOpsV1& pluginNet() {
  const std::string setting = paramStr(Param::kNetPlugin);
  Slots& all = slots();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (int i = 0; i < all.used; ++i)
    if (all.slot[i].setting == setting) return *all.ops[i];
  if (all.used == kNetPluginSlots - 1) {
    // The last slot is kept for this: it loads nothing and says why.
    NetPluginSlot& last = all.slot[kNetPluginSlots - 1];
    last.loadCode = Status::kInvalidUsage;
    last.loadError = "COLLCOMM_NET_PLUGIN=" + setting + ": this process already loaded " +
                     std::to_string(kNetPluginSlots - 1) + " different net plugin settings, the most it can";
    return failedNetAdapter(kNetPluginSlots - 1);
  }
  const int index = all.used++;
  all.slot[index].setting = setting;
  all.ops[index] = &load(index);
  return *all.ops[index];
}

Status netPluginInitOnce(NetPluginSlot& slot, Status (*run)(NetPluginSlot& slot)) {
  std::lock_guard<std::mutex> lock(slot.initMutex);
  if (!slot.initRan) {
    slot.initRan = true;
    slot.initCode = run(slot);
    if (!isOk(slot.initCode)) slot.initError = threadLastError();
    return slot.initCode;
  }
  if (isOk(slot.initCode)) return kOk;
  setThreadLastError(slot.initError);
  return slot.initCode;
}

}  // namespace collcomm::detail
