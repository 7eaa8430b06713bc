// Net plugins: the loader (net_plugin_loader.cc: COLLCOMM_NET_PLUGIN, the search, the checks) and
// the two adapters that make a loaded plugin an internal backend (net.h's NetOpsV1), so that the
// NET transport never sees the plugin's ABI: net_plugin_cc.cc for collcomm's own
// (include/collcomm_net.h), net_plugin_nccl.cc for NCCL's version 8 (nccl_net.h).
//
// NetOpsV1's functions take no context, so every loaded plugin gets a slot (one of
// kNetPluginSlots) and each adapter has one ops table per slot whose functions forward to that
// slot. A process loads each distinct COLLCOMM_NET_PLUGIN value once (tests switch between
// plugins) and keeps the library and its slot for its lifetime: a plugin is never unloaded (its
// threads, and memory reachable only from it, stay valid through exit).
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "collcomm_net.h"
#include "common/status.h"
#include "transport/net/nccl_net.h"
#include "transport/net/net.h"

namespace collcomm::detail {

inline constexpr int kNetPluginSlots = 16;

struct NetPluginSlot {
  std::string setting;  // COLLCOMM_NET_PLUGIN as the user gave it
  std::string path;     // the library loaded ("" when the load failed)
  // The load failed: loadCode and the sentence that every init call returns.
  Status loadCode = kOk;
  std::string loadError;
  std::string name;                // the plugin's name, for sentences
  const ccNet_v1_t* cc = nullptr;  // a collcomm plugin, or
  const void* nccl = nullptr;      // a NCCL plugin: a ccNcclNet_v<ncclVersion>_t
  int ncclVersion = 0;
  // The plugin's init runs once (NCCL's need not be idempotent); its outcome is kept.
  std::mutex initMutex;
  bool initRan = false;
  Status initCode = kOk;
  std::string initError;
};

// Slot `index` (0 <= index < kNetPluginSlots), owned by the loader.
NetPluginSlot& netPluginSlot(int index);
// The internal interface over slot `index`, for each kind of slot.
const NetOpsV1& ccNetAdapter(int index);
const NetOpsV1& ncclNetAdapter(int index);
const NetOpsV1& failedNetAdapter(int index);
// The plugin COLLCOMM_NET_PLUGIN names, loaded on first use. A load that failed gives a backend
// whose init fails with the loader's sentence, so communicator creation fails on the rank.
const NetOpsV1& pluginNet();
// The library file a setting names: a value with a '/' or ".so" is a file name, anything else a
// short name of libcollcomm-net-<name>.so.
std::string netPluginFileName(const std::string& setting);
// Runs a slot's plugin init once (under its mutex) through `run`; later calls return its outcome,
// the sentence recorded again on the calling thread.
Status netPluginInitOnce(NetPluginSlot& slot, Status (*run)(NetPluginSlot& slot));

// The ops table of slot `index` among Ops<0> .. Ops<kNetPluginSlots - 1> (each Ops<S> has a static
// NetOpsV1 kOps whose functions forward to slot S).
template <template <int> class Ops, int... S>
const NetOpsV1& netPluginOpsOf(int index, std::integer_sequence<int, S...>) {
  static const NetOpsV1* const table[] = {&Ops<S>::kOps...};
  return *table[index];
}
template <template <int> class Ops>
const NetOpsV1& netPluginOpsOf(int index) {
  return netPluginOpsOf<Ops>(index, std::make_integer_sequence<int, kNetPluginSlots>{});
}

}  // namespace collcomm::detail
