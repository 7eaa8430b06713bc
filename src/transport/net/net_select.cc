// Which backend the NET transport uses: the plugin COLLCOMM_NET_PLUGIN names when it is set
// (net_plugin_loader.cc), else COLLCOMM_NET (socket, the default, or ofi). The one place
// that decides it; a backend asked for that cannot work fails its init with a sentence (no
// silent fall back to sockets: a job asked for a network and must know it did not get it).
#include "common/params.h"
#include "transport/net/net.h"
#include "transport/net/net_plugin.h"

namespace collcomm::detail {

const NetOpsV1& selectedNet() {
  if (!paramStr(Param::kNetPlugin).empty()) return pluginNet();
  return paramStr(Param::kNet) == "ofi" ? ofiNet() : socketNet();
}

}  // namespace collcomm::detail
