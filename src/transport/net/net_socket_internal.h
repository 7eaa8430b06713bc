// Private to the socket backend (net_socket*.cc, not part of net.h): the types its files share — a
// device, a connection (SocketComm), its requests, its helper threads and the chunks they move —
// and the functions they call across files. Which file owns what:
//   net_socket.cc           the ops table (and the backend's design, in its banner)
//   net_socket_device.cc    devices, their properties, the shape of a connection, whole-segment sizes
//   net_socket_handshake.cc listen / connect / accept
//   net_socket_comm.cc      a connection's sockets, its failure and farewell, its end
//   net_socket_progress.cc  requests and the control socket's send/receive progress (the data path)
//   net_socket_helpers.cc   the helper threads that move chunks over the data sockets
//   net_socket_wire.h       what travels on the wire
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "common/status.h"
#include "transport/net/net.h"
#include "transport/net/net_socket_wire.h"

namespace collcomm::detail::netsocket {

// Receive side of the control socket: reads go through a staging buffer of kStageBytes (a header
// and a small payload in one call); a payload with at least kDirectBytes still to come is read
// straight into its buffer.
inline constexpr size_t kStageBytes = 16 << 10;
inline constexpr size_t kDirectBytes = 4 << 10;

struct Device {
  NetInterface iface;
  NetProperties props;
};

// ---- requests and connections

using Clock = std::chrono::steady_clock;

struct SocketComm;

struct Request {
  SocketComm* comm = nullptr;
  bool used = false;
  // send: 0 while its control part (header, and the payload when inline) is not all sent, then 2.
  // recv: 0 unmatched; 1 inline payload arriving; 2 control part done.
  int stage = 0;
  bool inlinePayload = false;  // send: the payload follows the header on the control socket
  char* data = nullptr;
  size_t capacity = 0;  // recv: buffer size
  size_t size = 0;      // bytes of the message
  uint32_t tag = 0;
  MsgHeader hdr{};
  size_t ctrlDone = 0;  // send: bytes of header + inline payload sent; recv: inline payload bytes arrived
  uint64_t seen = 0;    // the comm's epoch when this request was last tested (see socketTest)
  std::atomic<int> pendingChunks{0};
  std::atomic<bool> chunkFailed{false};  // a helper could not move one of its chunks
};

struct Chunk {
  char* ptr;
  size_t size;
  size_t done;
  Request* req;
};

// One helper thread and the data sockets it drives.
struct Helper {
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;      // under mu
  bool sleeping = false;  // under mu: waiting on cv; a poster notifies only then
  int firstSock = 0;
  int nSocks = 0;
  std::vector<std::deque<Chunk>> queues;  // per owned socket, under mu
};

struct SocketComm {
  bool isSend = false;
  Socket ctrl;
  std::vector<Socket> data;
  std::vector<std::unique_ptr<Helper>> helpers;
  int nSocksPerThread = 0;
  std::string peer;  // remote address, for sentences
  Request reqs[kNetMaxRequests];
  std::deque<Request*> order;   // posted and not yet reported done, in posting order
  uint64_t nextSock = 0;        // round-robin position for the next chunked message
  uint64_t epoch = 1;           // progress calls so far (see socketTest)
  std::atomic<int> ioError{0};  // helper threads: errno (or -1 for EOF) of the first failure
  bool failed = false;
  // send: the connection broke; the failure waits (briefly) for the receiver's farewell
  bool breaking = false;
  bool breakOnCtrl = false;  // the control socket itself reported the break
  Clock::time_point breakAt{};
  std::string breakWhy;
  unsigned char farewellBuf[8] = {};
  size_t farewellDone = 0;
  bool haveFarewell = false;
  uint32_t farewellWord = 0;
  // recv: the header being read, the request whose inline payload is being read, and what the
  // control socket delivered beyond what was asked for
  MsgHeader inHdr{};
  size_t inHdrDone = 0;
  Request* inReq = nullptr;
  size_t stageBegin = 0, stageEnd = 0;
  std::unique_ptr<char[]> stage;
  uint32_t ctrlReads = 0;  // reads of the control socket that brought data (readCtrl)
};

// ---- devices (net_socket_device.cc)

Status socketInit();
Status socketDevices(int* count);
Status socketGetProperties(int dev, NetProperties* props);
size_t socketWholeSegmentBytes(int dev, size_t maxBytes, size_t align);
// TCP's transmit unit over an interface: bytes of payload one send hands the stack at most (the
// MSS times the segments one GSO send holds); 0 when the MTU is unknown or absurd.
size_t tcpTransmitUnit(int mtu, bool ipv6, bool timestamps);
// The largest multiple of `align` <= maxBytes whose message (with `overhead` bytes of framing)
// ends in a whole unit or one at most max(kWholeSegmentSlack, align) bytes short of whole; 0 when
// a message that size fits in less than one unit anyway.
inline constexpr size_t kWholeSegmentSlack = 64;
size_t wholeUnitsMessage(size_t unit, size_t overhead, size_t maxBytes, size_t align);
// An integer sysctl (/proc/sys/...), 0 when unreadable.
int sysctlInt(const char* path);
// The MTU of interface `ifname` (0 when unknown).
int interfaceMtu(const std::string& ifname);
// A copy of device `dev` (finding the devices first when needed); a sentence when there is none.
Status deviceAt(int dev, Device* out);

// ---- handshake (net_socket_handshake.cc)

Status socketListen(int dev, const NetSecret& secret, void* handle, void** listenComm);
Status socketConnect(int dev, const NetSecret& secret, void* handle, void** sendComm);
void socketAbandonConnect(void* handle);
Status socketAccept(void* listenComm, void** recvComm);
Status socketCloseListen(void* listenComm);

// ---- a connection (net_socket_comm.cc)

// Takes the sockets of a finished handshake (no helper threads yet: see startHelpers).
SocketComm* newComm(bool isSend, Socket ctrl, std::vector<Socket> data, std::string peer);
// Stops the comm's helper threads, closes its sockets and frees it with its requests.
void destroyComm(SocketComm* comm);
IoStatus sendOnce(int fd, const void* p, size_t n, size_t* done);
IoStatus recvOnce(int fd, void* p, size_t n, size_t* done);
// recvOnce on a receiving comm's control socket, keeping its acknowledgements delayed (see
// net_socket_comm.cc).
IoStatus readCtrl(SocketComm* comm, void* p, size_t n, size_t* done);
Status failComm(SocketComm* comm, const std::string& what);
Status failClosed(SocketComm* comm, const std::string& what);
Status breakSend(SocketComm* comm, const std::string& why, bool onCtrl);
Status failIo(SocketComm* comm, const IoStatus& st, bool onCtrl);
Status socketFarewell(void* recvComm, uint32_t word);
bool socketPeerFarewell(void* sendComm, uint32_t* word);

// ---- data path (net_socket_progress.cc)

Status socketIsend(void* sendComm, const void* data, size_t size, uint32_t tag, void* mhandle, void** request);
Status socketIrecv(void* recvComm, int n, void** data, const size_t* sizes, const uint32_t* tags, void** mhandles,
                   void** request);
Status socketTest(void* request, bool* done, size_t* sizes);

// ---- helper threads (net_socket_helpers.cc)

// Starts nThreads helpers (none: 0) of nSocksPerThread data sockets each. Setup tier.
void startHelpers(SocketComm* comm, int nThreads, int nSocksPerThread);
// Stops and joins the helpers (their queued chunks are dropped). Setup tier.
void stopHelpers(SocketComm* comm);
void postChunks(SocketComm* comm, Request* r);

}  // namespace collcomm::detail::netsocket
