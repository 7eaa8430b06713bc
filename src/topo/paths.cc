// Path computation: a breadth-first search from every GPU, NET and CPU, then the P2P, PXN and
// GPUDirect RDMA rules that decide how traffic between a pair really flows.
#include "topo/paths.h"

#include <algorithm>

#include "common/log.h"
#include "common/params.h"
#include "topo/bandwidth.h"

namespace collcomm::detail {
namespace {

constexpr NodeType kPathTypes[] = {NodeType::kGpu, NodeType::kNet, NodeType::kCpu};

// Joining two path segments: the worse type wins, except that a C2C hop followed (or preceded)
// by a host bridge is its own kind (P2C).
PathType mergeTypes(PathType a, PathType b) {
  PathType hi = std::max(a, b), lo = std::min(a, b);
  if (hi == PathType::kPhb && lo == PathType::kC2c) return PathType::kP2c;
  return hi;
}

TopoPath concat(const TopoPath& first, const TopoPath& second) {
  TopoPath p;
  p.type = mergeTypes(first.type, second.type);
  p.bw = std::min(first.bw, second.bw);
  p.hops = first.hops + second.hops;
  return p;
}

struct Cell {
  TopoPath path;
  bool set = false;
};

// Paths from every node to `base`, stored into sys->path(*, *, base.type, base.index).
void searchFrom(TopoSystem* sys, NodeRef base, bool nvbDisable) {
  std::array<std::vector<Cell>, kNodeTypeCount> cells;
  for (int t = 0; t < kNodeTypeCount; ++t) cells[t].resize(sys->nodes(static_cast<NodeType>(t)).size());
  auto cell = [&](NodeRef r) -> Cell& { return cells[static_cast<int>(r.type)][r.index]; };
  cell(base) = Cell{TopoPath{PathType::kLoc, kLocBw, 0, -1, -1}, true};
  std::vector<NodeRef> frontier{base}, next;
  while (!frontier.empty()) {
    next.clear();
    for (NodeRef u : frontier) {
      const TopoPath pu = cell(u).path;
      for (const TopoLink& l : sys->node(u).links) {
        NodeRef v = l.remote;
        if (v == u) continue;
        // A GPU forwards traffic only as a one-hop NVLink relay between two GPUs.
        if (u.type == NodeType::kGpu && !(u == base) &&
            (nvbDisable || l.type != LinkType::kNvl || v.type != NodeType::kGpu || pu.hops > 1))
          continue;
        float bw = std::min(pu.bw, l.bw);
        Cell& cv = cell(v);
        // Fewest links first; among paths of the same length, the widest.
        if ((cv.set && cv.path.hops <= pu.hops) || cv.path.bw >= bw) continue;
        PathType t = l.type == LinkType::kNet ? PathType::kLoc : static_cast<PathType>(static_cast<int>(l.type));
        if (u.type == NodeType::kPci && v.type == NodeType::kPci) t = PathType::kPxb;
        if (l.type == LinkType::kPci && (u.type == NodeType::kCpu || v.type == NodeType::kCpu)) t = PathType::kPhb;
        if (u.type == NodeType::kGpu && !(u == base) && pu.type == PathType::kNvl && t == PathType::kNvl) t = PathType::kNvb;
        bool first = !cv.set;
        cv.path = TopoPath{mergeTypes(pu.type, t), bw, pu.hops + 1, -1, -1};
        cv.set = true;
        if (first || std::find(next.begin(), next.end(), v) == next.end()) next.push_back(v);
      }
    }
    std::swap(frontier, next);
  }
  for (NodeType from : kPathTypes) {
    for (int i = 0; i < sys->count(from); ++i) {
      const Cell& c = cells[static_cast<int>(from)][i];
      sys->path(from, i, base.type, base.index) = c.set ? c.path : TopoPath{};
    }
  }
}

bool levelFromEnv(Param p, PathType* level) {
  if (!paramIsSet(p)) return false;
  std::string s = paramStr(p);
  PathType t;
  if (!parsePathType(s, &t) || t > PathType::kSys) {
    CC_WARN("%s=\"%s\" is not a path level (LOC, NVL, NVB, PIX, PXB, PHB, SYS); using %s", paramInfo(p).name, s.c_str(),
            pathTypeName(*level));
    return false;
  }
  *level = t;
  CC_INFO(kSubsysGraph, "%s set by environment to %s", paramInfo(p).name, pathTypeName(t));
  return true;
}

}  // namespace

PathOptions pathOptionsFromEnv(const TopoSystem& sys) {
  PathOptions o;
  const auto& cpus = sys.nodes(NodeType::kCpu);
  bool amd = !cpus.empty() && cpus[0].cpu.arch == "x86_64" && cpus[0].cpu.vendor == "AuthenticAMD";
  // AMD's host bridges forward peer-to-peer traffic well; with one pair of GPUs it beats a copy.
  if (amd && sys.count(NodeType::kGpu) <= 2) o.p2pLevel = PathType::kSys;
  levelFromEnv(Param::kP2pLevel, &o.p2pLevel);
  levelFromEnv(Param::kNetGdrLevel, &o.gdrLevel);
  o.p2pDisable = paramInt(Param::kP2pDisable) == 1;
  o.pxnDisable = paramInt(Param::kPxnDisable) == 1;
  o.nvbDisable = paramInt(Param::kNvbDisable) == 1;
  return o;
}

int localCpu(const TopoSystem& sys, NodeType type, int index) {
  int best = -1;
  for (int c = 0; c < sys.count(NodeType::kCpu); ++c) {
    const TopoPath& p = sys.path(type, index, NodeType::kCpu, c);
    if (p.type == PathType::kDis) continue;
    if (best < 0 || p.hops < sys.path(type, index, NodeType::kCpu, best).hops) best = c;
  }
  return best;
}

bool p2pAllowed(const TopoSystem& sys, int gpu1, int gpu2, const PathOptions& opts) {
  if (gpu1 == gpu2) return true;
  if (opts.p2pDisable) return false;
  const TopoPath& p = sys.path(NodeType::kGpu, gpu1, NodeType::kGpu, gpu2);
  return p.bounceCpu < 0 && p.type <= opts.p2pLevel;
}

bool gdrAllowed(const TopoSystem& sys, int gpu, int net, const PathOptions& opts) {
  const TopoPath& p = sys.path(NodeType::kGpu, gpu, NodeType::kNet, net);
  if (p.bounceCpu >= 0 || p.type == PathType::kDis) return false;
  int viaGpu = p.type == PathType::kPxn && p.relayGpu >= 0 ? p.relayGpu : gpu;
  PathType distance = viaGpu == gpu ? p.type : sys.path(NodeType::kGpu, viaGpu, NodeType::kNet, net).type;
  if (distance == PathType::kP2c || distance == PathType::kPxn) distance = PathType::kPxb;
  return sys.nodes(NodeType::kGpu)[viaGpu].gpu.gdr && sys.nodes(NodeType::kNet)[net].net.gdr && distance <= opts.gdrLevel;
}

void computePaths(TopoSystem* sys, const PathOptions& opts) {
  sys->resetPaths();
  for (NodeType t : kPathTypes)
    for (int i = 0; i < sys->count(t); ++i) searchFrom(sys, NodeRef{t, i}, opts.nvbDisable);

  const int nGpus = sys->count(NodeType::kGpu), nNets = sys->count(NodeType::kNet);
  // A GPU with a C2C link (Grace Hopper) reaches NICs on its CPU's PCIe through that link (P2C)
  // rather than through its own, narrower PCIe link, even where the search found a tie.
  for (int g = 0; g < nGpus; ++g) {
    for (const TopoLink& l : sys->nodes(NodeType::kGpu)[g].links) {
      if (l.type != LinkType::kC2c || l.remote.type != NodeType::kCpu) continue;
      const int c = l.remote.index;
      for (int n = 0; n < nNets; ++n) {
        TopoPath out = concat(sys->path(NodeType::kGpu, g, NodeType::kCpu, c), sys->path(NodeType::kCpu, c, NodeType::kNet, n));
        TopoPath& cur = sys->path(NodeType::kGpu, g, NodeType::kNet, n);
        if (out.type > cur.type || (out.type == cur.type && out.bw <= cur.bw)) continue;
        cur = out;
        sys->path(NodeType::kNet, n, NodeType::kGpu, g) =
            concat(sys->path(NodeType::kNet, n, NodeType::kCpu, c), sys->path(NodeType::kCpu, c, NodeType::kGpu, g));
      }
    }
  }
  // GPU pairs that may not use P2P stage through the sender's CPU.
  for (int g = 0; g < nGpus; ++g) {
    int cpu = localCpu(*sys, NodeType::kGpu, g);
    for (int p = 0; p < nGpus; ++p) {
      if (p == g || cpu < 0) continue;
      TopoPath& path = sys->path(NodeType::kGpu, g, NodeType::kGpu, p);
      bool allowed = !opts.p2pDisable && path.type <= opts.p2pLevel;
      if (allowed || path.type == PathType::kDis) continue;
      TopoPath via = concat(sys->path(NodeType::kGpu, g, NodeType::kCpu, cpu), sys->path(NodeType::kCpu, cpu, NodeType::kGpu, p));
      via.bounceCpu = cpu;
      path = via;
    }
  }

  // PXN: decided on the searched paths, so one GPU's relay choice cannot hide another's.
  std::vector<TopoPath> searched(static_cast<size_t>(nGpus) * nNets);
  for (int g = 0; g < nGpus; ++g)
    for (int n = 0; n < nNets; ++n) searched[static_cast<size_t>(g) * nNets + n] = sys->path(NodeType::kGpu, g, NodeType::kNet, n);
  auto orig = [&](int g, int n) -> const TopoPath& { return searched[static_cast<size_t>(g) * nNets + n]; };
  for (int n = 0; !opts.pxnDisable && n < nNets; ++n) {
    for (int g = 0; g < nGpus; ++g) {
      const TopoPath& mine = orig(g, n);
      int relay = -1;
      for (int p = 0; p < nGpus; ++p) {
        if (p == g) continue;
        const TopoPath& peerNic = orig(p, n);
        if (peerNic.type > PathType::kPxb) continue;
        if (sys->path(NodeType::kGpu, p, NodeType::kGpu, g).type > PathType::kNvl) continue;
        if (!(peerNic.bw > mine.bw || mine.type > PathType::kPxb)) continue;
        if (relay < 0 || peerNic.type < orig(relay, n).type ||
            (peerNic.type == orig(relay, n).type && peerNic.bw > orig(relay, n).bw))
          relay = p;
      }
      if (relay < 0) continue;
      TopoPath via = concat(sys->path(NodeType::kGpu, g, NodeType::kGpu, relay), orig(relay, n));
      via.type = PathType::kPxn;
      via.relayGpu = relay;
      sys->path(NodeType::kGpu, g, NodeType::kNet, n) = via;
    }
  }

  // Without GPUDirect RDMA, NIC traffic for a GPU is staged in memory near that GPU.
  for (int g = 0; g < nGpus; ++g) {
    int cpu = localCpu(*sys, NodeType::kGpu, g);
    if (cpu < 0) continue;
    for (int n = 0; n < nNets; ++n) {
      if (sys->path(NodeType::kGpu, g, NodeType::kNet, n).type == PathType::kDis || gdrAllowed(*sys, g, n, opts)) continue;
      TopoPath out = concat(sys->path(NodeType::kGpu, g, NodeType::kCpu, cpu), sys->path(NodeType::kCpu, cpu, NodeType::kNet, n));
      out.bounceCpu = cpu;
      TopoPath in = concat(sys->path(NodeType::kNet, n, NodeType::kCpu, cpu), sys->path(NodeType::kCpu, cpu, NodeType::kGpu, g));
      in.bounceCpu = cpu;
      sys->path(NodeType::kGpu, g, NodeType::kNet, n) = out;
      sys->path(NodeType::kNet, n, NodeType::kGpu, g) = in;
    }
  }
  sys->setPathsComputed();
}

std::vector<int> nearestNets(const TopoSystem& sys, int gpu) {
  std::vector<int> best;
  const TopoPath* bestPath = nullptr;
  for (int n = 0; n < sys.count(NodeType::kNet); ++n) {
    const TopoPath& p = sys.path(NodeType::kGpu, gpu, NodeType::kNet, n);
    if (p.type == PathType::kDis) continue;
    if (bestPath == nullptr || p.type < bestPath->type || (p.type == bestPath->type && p.bw > bestPath->bw)) {
      best.clear();
      bestPath = &p;
    }
    if (p.type == bestPath->type && p.bw == bestPath->bw) best.push_back(n);
  }
  return best;
}

int preferredNet(const TopoSystem& sys, int gpu) {
  std::vector<int> mine = nearestNets(sys, gpu);
  if (mine.empty()) return -1;
  // GPUs with the same nearest set share it round-robin, in GPU order.
  int position = 0;
  for (int g = 0; g < gpu; ++g)
    if (nearestNets(sys, g) == mine) ++position;
  return mine[static_cast<size_t>(position) % mine.size()];
}

}  // namespace collcomm::detail
