// Every COLLCOMM_* variable, declared once: X(id, type, "NAME", default, "one-line doc").
// type is INT or STR. docs/env.md lists the same set (a unit test checks that it does).
// clang-format off
#define CC_PARAM_LIST(X) \
  X(Debug,          STR, "COLLCOMM_DEBUG",          "",     "log level: VERSION, WARN, INFO or TRACE (default: none)") \
  X(DebugSubsys,    STR, "COLLCOMM_DEBUG_SUBSYS",   "INIT,ENV", "comma list of INIT,COLL,P2P,SHM,NET,BOOTSTRAP,GRAPH,TUNING,ENV,ALLOC,PROXY,PLAN,ALL; ^ excludes") \
  X(DebugFile,      STR, "COLLCOMM_DEBUG_FILE",     "",     "write logs to this file instead of stderr (%h host, %p pid)") \
  X(Timeout,        INT, "COLLCOMM_TIMEOUT",        "300",  "seconds any wait may take, init included, before ccTimeout") \
  X(SocketIfname,   STR, "COLLCOMM_SOCKET_IFNAME",  "",     "interfaces for bootstrap/net sockets: prefix list, ^ excludes, = exact") \
  X(SocketFamily,   STR, "COLLCOMM_SOCKET_FAMILY",  "",     "AF_INET or AF_INET6 to force an address family") \
  X(CommId,         STR, "COLLCOMM_COMM_ID",        "",     "<host>:<port> of a fixed rendezvous root instead of ccGetUniqueId's") \
  X(P2pDisable,     INT, "COLLCOMM_P2P_DISABLE",    "0",    "1: host ranks in one process connect through SHM (or the next transport); GPU ranks (CUDA P2P and IPC) through NET, in pinned host memory") \
  X(P2pMaxTransfers, INT, "COLLCOMM_P2P_MAX_TRANSFERS", "0", "most point-to-point transfers one run moves, at least 2 (0: the executor's own limit: 32 a GPU kernel, none on hosts); AlltoAll, Gather and Scatter beyond it run in rounds of peers at equal distance, larger send/recv groups are refused") \
  X(ShmDisable,     INT, "COLLCOMM_SHM_DISABLE",    "0",    "1: no shared-memory transport between processes") \
  X(Buffsize,       INT, "COLLCOMM_BUFFSIZE",       "1048576", "bytes of each Simple-protocol connection buffer") \
  X(LlBuffsize,     INT, "COLLCOMM_LL_BUFFSIZE",    "65536", "bytes of each LL-protocol connection buffer") \
  X(Proto,          STR, "COLLCOMM_PROTO",          "",     "force a protocol: Simple or LL") \
  X(Algo,           STR, "COLLCOMM_ALGO",           "",     "force an algorithm: Ring, OneShot (AllReduce only), Direct (AllGather, Broadcast, ReduceScatter, AllReduce; when the communicator can) or Tree (AllReduce on host communicators)") \
  X(OneshotThreshold, INT, "COLLCOMM_ONESHOT_THRESHOLD", "-1", "largest AllReduce run one-shot, in bytes a rank receives (message x (ranks - 1)); -1: planner default (64 KiB; 256 KiB for two ranks over NET)") \
  X(DirectThreshold, INT, "COLLCOMM_DIRECT_THRESHOLD", "-1", "smallest message (bytes, as the perf tools count them) run by the single-copy Direct algorithm where the communicator can, with no upper end; -1: planner default per collective") \
  X(CmaDisable,     INT, "COLLCOMM_CMA_DISABLE",    "0",    "1: no cross-memory attach (process_vm_readv) between processes, so no Direct algorithm for communicators spanning processes") \
  X(LlThreshold,    INT, "COLLCOMM_LL_THRESHOLD",   "-1",   "largest message (bytes) sent with LL; -1: planner default") \
  X(StreamThreshold, INT, "COLLCOMM_STREAM_THRESHOLD", "-1", "smallest message (bytes) whose results are written to user buffers with streaming stores, over NET too; -1: planner default") \
  X(StepStream,     STR, "COLLCOMM_STEP_STREAM",    "",     "large Simple-protocol FIFO steps written with streaming stores: auto (default: while the receiver finds the sender's core far, unless plain steps have timed faster there), always, or never") \
  X(SendNowThreshold, INT, "COLLCOMM_SEND_NOW_THRESHOLD", "-1", "smallest Simple-protocol FIFO step (bytes) that a host executor hands to the network itself as soon as it publishes it over NET; -1: planner default (16 KiB)") \
  X(StepStreamThreshold, INT, "COLLCOMM_STEP_STREAM_THRESHOLD", "-1", "smallest message (bytes) whose Simple-protocol FIFO steps between ranks on one host are written with streaming stores; -1: planner default") \
  X(HostSimd,       STR, "COLLCOMM_HOST_SIMD",      "auto", "vector instructions of the host executor's reductions: auto (the widest the CPU has), avx512, avx2 or portable") \
  X(MinNchannels,   INT, "COLLCOMM_MIN_NCHANNELS",  "-1",   "least channels per collective; -1: planner default") \
  X(MaxNchannels,   INT, "COLLCOMM_MAX_NCHANNELS",  "-1",   "most channels per collective; -1: planner default") \
  X(SpinCount,      INT, "COLLCOMM_SPIN_COUNT",     "2000", "polls a waiting host thread spins before it starts yielding the core; unset: 2000, or 0 when a machine (one kernel, whatever COLLCOMM_HOSTID says) has more ranks than the CPUs their threads may use (counting, once NET is in use, one proxy thread per process); at 0 (ranks alone outnumbering the CPUs, or set) a wait that runs network progress rounds yields after each") \
  X(ParkAfterUs,    INT, "COLLCOMM_PARK_AFTER_US",  "200",  "microseconds a waiting host thread yields its core before it sleeps until the peer publishes what it waits for (futex; not over NET); 0: never sleeps") \
  X(GpuFusedLaunch, INT, "COLLCOMM_GPU_FUSED_LAUNCH", "0",  "1: the ranks of a communicator that share a GPU in one process run each ring collective as one kernel, launched by the last to arrive (written without a GPU and not yet run on one: off by default)") \
  X(GpuGroupLaunch, INT, "COLLCOMM_GPU_GROUP_LAUNCH", "1",  "1: a GPU communicator's ring collectives of one group (ccGroupStart/End) that share their kind, type, reduction, protocol and stream run as one kernel launch, up to 16 at a time (written without a GPU and not yet run on one); 0: one launch each") \
  X(CuMemEnable,    INT, "COLLCOMM_CUMEM_ENABLE",   "1",    "0: GPU ranks of different processes share their FIFOs through cudaIpcGetMemHandle instead of cuMem* memory handed over as a file descriptor") \
  X(CuMemHostEnable, INT, "COLLCOMM_CUMEM_HOST_ENABLE", "1", "0: NET FIFOs of GPU ranks in pinned host memory come from cudaHostAlloc instead of cuMem* host memory (which is used only with CUDA 12.6 or later drivers, and not again on a device where it failed)") \
  X(GpuPollers,     INT, "COLLCOMM_GPU_POLLERS",    "1",    "threads of a GPU kernel's block that poll a Simple-protocol step's head or tail: 1 thread 0 alone, the others waiting at a barrier; 0 every thread (on an H200, 4 ranks' 1 GiB allreduce moved a fifteenth as much)") \
  X(TopoFile,       STR, "COLLCOMM_TOPO_FILE",      "",     "load the machine topology from this NCCL-format XML file instead of detecting it") \
  X(TopoDumpFile,   STR, "COLLCOMM_TOPO_DUMP_FILE", "",     "write the topology in use to this XML file (NCCL format)") \
  X(TopoMerge,      INT, "COLLCOMM_TOPO_MERGE",     "0",    "1: merge COLLCOMM_TOPO_FILE over local detection instead of replacing it") \
  X(P2pLevel,       STR, "COLLCOMM_P2P_LEVEL",      "",     "farthest GPU-GPU path using P2P: LOC, NVL, NVB, PIX, PXB, PHB or SYS (default PXB)") \
  X(NetGdrLevel,    STR, "COLLCOMM_NET_GDR_LEVEL",  "",     "farthest GPU-NIC path using GPUDirect RDMA: LOC, NVL, NVB, PIX, PXB, PHB or SYS (default PXB)") \
  X(PxnDisable,     INT, "COLLCOMM_PXN_DISABLE",    "0",    "1: never route GPU-to-NIC traffic through an NVLink peer GPU (PXN)") \
  X(NvbDisable,     INT, "COLLCOMM_NVB_DISABLE",    "0",    "1: no GPU-GPU NVLink paths through an intermediate GPU (NVB)") \
  X(SocketNthreads, INT, "COLLCOMM_SOCKET_NTHREADS", "-1", "helper threads per NET socket connection (0: all data on the control socket); -1: by link speed, none below 4 CPUs") \
  X(NsocksPerthread, INT, "COLLCOMM_NSOCKS_PERTHREAD", "-1", "data sockets per helper thread of a NET socket connection; -1: by link speed") \
  X(RingOrder,      STR, "COLLCOMM_RING_ORDER",     "hosts", "order of the ranks on each channel's ring: hosts (ranks of one host contiguous, hosts by lowest rank), identity (rank order) or reverse (hosts, backwards; for tests)") \
  X(Net,            STR, "COLLCOMM_NET",            "socket", "backend of the NET transport: socket (TCP sockets) or ofi (libfabric, loaded at run time; see docs/net.md)") \
  X(NetPlugin,      STR, "COLLCOMM_NET_PLUGIN",     "",     "net plugin library used by the NET transport instead of COLLCOMM_NET: a path, a file name (dlopen's search, then libcollcomm's folder) or a short name <n> for libcollcomm-net-<n>.so; collcomm (ccNetPlugin_v1) or NCCL v9/v8 (ncclNetPlugin_v9/_v8) plugins; see docs/net.md") \
  X(OfiProvider,    STR, "COLLCOMM_OFI_PROVIDER",   "",     "libfabric provider of COLLCOMM_NET=ofi (tcp, shm, verbs, efa, ...; as fi_info names them); unset: the best reliable one found") \
  X(Hostid,         STR, "COLLCOMM_HOSTID",         "",     "host identity replacing hostname+boot id in the same-host test (containers, network namespaces, tests)") \
  X(IdFile,         STR, "COLLCOMM_ID_FILE",        "",     "read by libcollcomm_launch only: the file where rank 0 of a launched job publishes its id (default: under /tmp, named after the job)")

// The values a variable accepts, where not every integer (INT) or every text (STR) is one. A value
// outside them warns, always, naming what is used instead (the default), and counts as unset.
// COLLCOMM_DEBUG and COLLCOMM_DEBUG_SUBSYS are checked by log.cc, which owns their words;
// COLLCOMM_PROTO, COLLCOMM_ALGO and COLLCOMM_STEP_STREAM fail communicator creation instead
// (plan/tuner.cc), which is louder still.
// X(id, least, most): an INT's range.
#define CC_PARAM_RANGES(X) \
  X(Timeout,        1, INT32_MAX) \
  X(P2pDisable,     0, 1) \
  X(P2pMaxTransfers, 0, INT32_MAX) \
  X(ShmDisable,     0, 1) \
  X(CmaDisable,     0, 1) \
  X(TopoMerge,      0, 1) \
  X(PxnDisable,     0, 1) \
  X(NvbDisable,     0, 1) \
  X(Buffsize,       1, INT32_MAX) \
  X(LlBuffsize,     1, INT32_MAX) \
  X(OneshotThreshold, -1, INT64_MAX) \
  X(DirectThreshold, -1, INT64_MAX) \
  X(LlThreshold,    -1, INT64_MAX) \
  X(StreamThreshold, -1, INT64_MAX) \
  X(SendNowThreshold, -1, INT64_MAX) \
  X(StepStreamThreshold, -1, INT64_MAX) \
  X(MinNchannels,   -1, 64) \
  X(MaxNchannels,   -1, 64) \
  X(SpinCount,      0, INT32_MAX) \
  X(ParkAfterUs,    0, 60000000) \
  X(GpuFusedLaunch, 0, 1) \
  X(GpuGroupLaunch, 0, 1) \
  X(CuMemEnable,    0, 1) \
  X(CuMemHostEnable, 0, 1) \
  X(GpuPollers,     0, 1) \
  X(SocketNthreads, -1, 16) \
  X(NsocksPerthread, -1, 64)
// X(id, "word|word|..."): a STR's words (matched ignoring case; the value read is the word as
// spelled here).
#define CC_PARAM_WORDS(X) \
  X(SocketFamily,   "AF_INET|AF_INET6") \
  X(Net,            "socket|ofi") \
  X(HostSimd,       "auto|avx512|avx2|portable") \
  X(RingOrder,      "hosts|identity|reverse") \
  X(P2pLevel,       "LOC|NVL|NVB|PIX|PXB|PHB|SYS") \
  X(NetGdrLevel,    "LOC|NVL|NVB|PIX|PXB|PHB|SYS")
// clang-format on
