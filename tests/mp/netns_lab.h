// Ranks on separate "hosts" for the multi-process tests: network namespaces joined by a bridge,
// made by the test when it runs as root (setUp says why not elsewhere, and the test skips).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace collcomm::test {

// nHosts network namespaces ccns<pid>h<i>, each with lo and one veth "ccnet" at 10.250.0.<i+1>/24,
// whose other ends join a bridge in a further namespace ccns<pid>b. Only these namespaces' own
// addresses are used. Removed when the lab goes away; a lab of a test run that died (its pid gone)
// is removed when the next one starts.
class NetnsLab {
 public:
  static constexpr const char* kPrefix = "ccns";
  static constexpr const char* kIfname = "ccnet";

  ~NetnsLab() {
    for (const auto& ns : made_) sh("ip netns delete " + ns);
  }

  // "" once the hosts can reach each other, else why not (no privileges, no veth/bridge support).
  std::string setUp(int nHosts) {
    removeStale();
    const std::string base = std::string(kPrefix) + std::to_string(getpid());
    bridge_ = base + "b";
    if (sh("ip netns add " + bridge_) != 0) return "cannot create a network namespace (ip netns add needs root)";
    made_.push_back(bridge_);
    if (sh("ip -n " + bridge_ + " link set lo up") != 0 || sh("ip -n " + bridge_ + " link add br0 type bridge") != 0 ||
        sh("ip -n " + bridge_ + " link set br0 up") != 0)
      return "cannot make a bridge in namespace " + bridge_;
    for (int i = 0; i < nHosts; ++i) {
      const std::string ns = base + "h" + std::to_string(i), port = "vb" + std::to_string(i);
      if (sh("ip netns add " + ns) != 0) return "cannot create namespace " + ns;
      made_.push_back(ns);
      hosts_.push_back(ns);
      if (sh("ip -n " + ns + " link set lo up") != 0 ||
          sh("ip link add " + std::string(kIfname) + " netns " + ns + " type veth peer name " + port + " netns " +
             bridge_) != 0 ||
          sh("ip -n " + ns + " addr add " + address(i) + "/24 dev " + kIfname) != 0 ||
          sh("ip -n " + ns + " link set " + kIfname + " up") != 0 ||
          sh("ip -n " + bridge_ + " link set " + port + " master br0") != 0 ||
          sh("ip -n " + bridge_ + " link set " + port + " up") != 0)
        return "cannot wire namespace " + ns + " to the bridge (veth/bridge support missing?)";
    }
    return "";
  }

  const std::string& host(int i) const { return hosts_[i]; }
  static std::string address(int i) { return "10.250.0." + std::to_string(i + 1); }
  // Takes host i's link down (from inside its namespace).
  bool linkDown(int i) { return sh("ip -n " + hosts_[i] + " link set " + kIfname + " down") == 0; }

  // Rank r runs in host r: COLLCOMM_HOSTID=host<r>, sockets on the veth, rendezvous at host 0.
  std::function<std::vector<std::string>(int)> launcher() const {
    return launcher([](int rank) { return rank; });
  }
  // Rank r runs in host hostOf(r) (rank 0 in host 0, where the rendezvous is).
  std::function<std::vector<std::string>(int)> launcher(std::function<int(int)> hostOf) const {
    const std::string commId = address(0) + ":" + std::to_string(20000 + getpid() % 20000);
    return [this, commId, hostOf](int rank) {
      const int h = hostOf(rank);
      return std::vector<std::string>{"ip",
                                      "netns",
                                      "exec",
                                      hosts_[h],
                                      "env",
                                      "COLLCOMM_HOSTID=host" + std::to_string(h),
                                      std::string("COLLCOMM_SOCKET_IFNAME=") + kIfname,
                                      "COLLCOMM_COMM_ID=" + commId};
    };
  }

 private:
  static int sh(const std::string& cmd) {
    const int st = system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }

  // Namespaces ccns<pid>... whose test process no longer runs.
  static void removeStale() {
    FILE* f = popen("ip netns list 2>/dev/null", "r");
    if (f == nullptr) return;
    char line[256];
    std::vector<std::string> stale;
    const size_t n = strlen(kPrefix);
    while (fgets(line, sizeof(line), f) != nullptr) {
      std::string name(line, strcspn(line, " \n"));
      if (name.compare(0, n, kPrefix) != 0) continue;
      const long pid = strtol(name.c_str() + n, nullptr, 10);
      if (pid > 0 && pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
    }
    pclose(f);
    for (const auto& ns : stale) sh("ip netns delete " + ns);
  }

  std::string bridge_;
  std::vector<std::string> hosts_;
  std::vector<std::string> made_;
};

}  // namespace collcomm::test
