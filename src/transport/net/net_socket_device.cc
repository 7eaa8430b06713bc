// The socket backend's devices: which interfaces it offers (COLLCOMM_SOCKET_IFNAME / _FAMILY),
// their properties, the shape of a connection over them (helper threads and sockets per thread,
// from link speed and the CPUs the process may use), and the message sizes TCP moves over them in
// whole segments.
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "common/log.h"
#include "common/params.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_internal.h"

namespace collcomm::detail {
namespace netsocket {
namespace {

std::mutex g_devMu;
bool g_devInited = false;
std::string g_devKey;  // COLLCOMM_SOCKET_IFNAME and _FAMILY the device list was made under
std::vector<Device> g_devs;

int linkSpeedMbps(const std::string& ifname) {
  std::string path = "/sys/class/net/" + ifname + "/speed";
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  int speed = 0;
  if (fscanf(f, "%d", &speed) != 1 || speed < 0) speed = 0;
  fclose(f);
  return speed;
}

}  // namespace

// Finds the devices; again when COLLCOMM_SOCKET_IFNAME or COLLCOMM_SOCKET_FAMILY changed since
// (the bootstrap reads them at every communicator's creation too, so both keep agreeing).
// Connections already made keep their addresses.
Status socketInit() {
  std::lock_guard<std::mutex> lock(g_devMu);
  const std::string key = paramStr(Param::kSocketIfname) + "|" + paramStr(Param::kSocketFamily);
  if (g_devInited && key == g_devKey) return kOk;
  std::vector<NetInterface> ifs;
  CC_CHECK(findInterfaces(16, &ifs));
  g_devs.clear();
  for (const NetInterface& ni : ifs) {
    Device d;
    d.iface = ni;
    d.props = NetProperties{};
    snprintf(d.props.name, sizeof(d.props.name), "%s", ni.name.c_str());
    snprintf(d.props.address, sizeof(d.props.address), "%s", ni.addr.hostString().c_str());
    d.props.speedMbps = linkSpeedMbps(ni.name);
    d.props.latencyUs = 0;
    d.props.maxComms = 65536;
    d.props.maxRecvs = 1;
    d.props.maxMessageBytes = 1ull << 40;
    d.props.supportsDeviceMemory = false;
    g_devs.push_back(d);
    CC_INFO(kSubsysNet, "net/socket: device %zu is %s %s, speed %d Mb/s", g_devs.size() - 1, ni.name.c_str(),
            ni.addr.hostString().c_str(), d.props.speedMbps);
  }
  g_devInited = true;
  g_devKey = key;
  return kOk;
}

Status socketDevices(int* count) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  *count = static_cast<int>(g_devs.size());
  return kOk;
}

Status deviceAt(int dev, Device* out) {
  CC_CHECK(socketInit());
  std::lock_guard<std::mutex> lock(g_devMu);
  if (dev < 0 || dev >= static_cast<int>(g_devs.size()))
    return CC_ERROR(Status::kInternalError, "net/socket: no device %d (there are %zu)", dev, g_devs.size());
  *out = g_devs[dev];
  return kOk;
}

Status socketGetProperties(int dev, NetProperties* props) {
  Device d;
  CC_CHECK(deviceAt(dev, &d));
  *props = d.props;
  return kOk;
}

// Asked of the kernel: sysfs may show another namespace.
int interfaceMtu(const std::string& ifname) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  snprintf(req.ifr_name, sizeof(req.ifr_name), "%s", ifname.c_str());
  const int mtu = ioctl(fd, SIOCGIFMTU, &req) == 0 ? req.ifr_mtu : 0;
  close(fd);
  return mtu > 0 ? mtu : 0;
}

int sysctlInt(const char* path) {
  int v = 0;
  if (FILE* f = fopen(path, "r")) {
    if (fscanf(f, "%d", &v) != 1) v = 0;
    fclose(f);
  }
  return v;
}

// The MSS is the MTU less the IP and TCP headers and the timestamp option; an IPv4 packet is at
// most 65535 bytes in all, an IPv6 one 65535 after its header (loopback's MTU of 65536 gives 65483
// and 65464). One GSO send holds as many MSS as fit in the kernel's 64 KiB size goal less room for
// headers (at least one): 45 x 1448 = 65160 on a 1500-byte Ethernet MTU, 7 x 8948 with jumbo frames.
size_t tcpTransmitUnit(int mtu, bool ipv6, bool timestamps) {
  constexpr int kGsoGoal = 65536 - 1 - 320;
  const int ipBytes = ipv6 ? 40 : 20;
  const int packet = std::min(mtu, ipv6 ? 65535 + 40 : 65535);
  const int mss = packet - ipBytes - 20 - (timestamps ? 12 : 0);
  if (mss < 64) return 0;
  return static_cast<size_t>(mss) * static_cast<size_t>(std::max(1, kGsoGoal / mss));
}

size_t wholeUnitsMessage(size_t unit, size_t overhead, size_t maxBytes, size_t align) {
  if (unit == 0 || align == 0) return 0;
  const size_t slack = std::max(kWholeSegmentSlack, align);
  const size_t top = maxBytes / align * align;
  const size_t units = (top + overhead) / unit;
  const size_t over = (top + overhead) % unit;
  if (over == 0 || over + slack >= unit) return top;  // already ends in a full or nearly full unit
  if (units == 0 || units * unit < overhead + align) return 0;
  return (units * unit - overhead) / align * align;
}

// On the control socket a message is its header and payload, one stream; a connection with data
// sockets deals large messages over them in chunks (postChunks), which are left as they are.
size_t socketWholeSegmentBytes(int dev, size_t maxBytes, size_t align) {
  Device d;
  if (!isOk(deviceAt(dev, &d))) return 0;
  int threads = 0, socksPerThread = 0;
  socketThreadsAndSockets(d.props.speedMbps, processCpus(), &threads, &socksPerThread);
  if (threads * socksPerThread > 0) return 0;
  const bool timestamps = sysctlInt("/proc/sys/net/ipv4/tcp_timestamps") != 0;
  const size_t unit = tcpTransmitUnit(interfaceMtu(d.iface.name), d.iface.addr.family() == AF_INET6, timestamps);
  return wholeUnitsMessage(unit, sizeof(MsgHeader), maxBytes, align);
}

}  // namespace netsocket

using netsocket::kMaxSocks;
using netsocket::kMaxThreads;

namespace {
constexpr int kMinCpusForHelpers = 4;  // see socketThreadsAndSockets
}  // namespace

void socketThreadsAndSockets(int speedMbps, int cpus, int* nThreads, int* nSocksPerThread) {
  // Auto: helper threads only pay off with cores to run on; a process that may use fewer than
  // kMinCpusForHelpers CPUs (bound to a core per rank, a small VM) moves everything on the control
  // socket with its proxy thread (on loopback with a core per rank: 2.6-2.8 GB/s at 16 MiB against
  // 2.0-2.4 with a helper). Otherwise one helper thread with two sockets up to 25 Gb/s (and when the
  // speed is unknown, as on loopback); more threads for faster links, where one core cannot keep
  // a socket busy.
  int t = speedMbps >= 100000 ? 4 : speedMbps >= 25000 ? 2 : 1;
  if (cpus > 0 && cpus < kMinCpusForHelpers) t = 0;
  int s = 2;
  const int64_t userT = paramInt(Param::kSocketNthreads), userS = paramInt(Param::kNsocksPerthread);
  if (userT >= 0) t = static_cast<int>(std::min<int64_t>(userT, kMaxThreads));
  if (userS > 0) s = static_cast<int>(std::min<int64_t>(userS, kMaxSocks));
  if (t * s > kMaxSocks) s = kMaxSocks / t;
  *nThreads = t;
  *nSocksPerThread = t == 0 ? 0 : s;
}

int processCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace collcomm::detail
