// NET transport: ranks on different hosts (or on one host with P2P and SHM disabled), over a net
// backend (net.h: sockets, or libfabric with COLLCOMM_NET=ofi), driven by the proxy thread
// (proxy/proxy.h). The FIFO block (and the LL staging buffer) are registered with the backend once
// per connection, for backends whose network needs registered memory.
//
// Each side has an ordinary FIFO (device/fifo.h) in its own memory (pinned host memory the device
// reaches, for GPU ranks: net_transport.h), and the executors run the same protocol code as for
// P2P/SHM. The proxy of the sending process moves each published step
// from its local FIFO to the network; the proxy of the receiving process lands it in the
// receiver's FIFO and publishes it:
//   Simple: sender proxy sees simpleTail pass a step, isends the slot's payload followed by its
//           size word (simpleBytes[slot], which holds the call tag: device/call_tag.h; 8 bytes
//           that netStepMaxBytes leaves room for), tag kTagSimple; when the send is done it
//           release-stores the local simpleHead, so the executor may reuse the slot. Receiver
//           proxy irecvs step s into slot s % kNumSteps once the executor has released it
//           (simpleHead + kNumSteps > s); on completion it stores the size word that arrived in
//           simpleBytes and release-stores simpleTail.
//   LL:     sender proxy reads the step's size from llBytes, finds its lines with its own
//           LlCursor and waits for every line's flag, then isends the lines as they are (flags
//           included, tag kTagLl); when the send is done it hands the steps and their lines back
//           (llHeadLine, llHead). Receiver proxy irecvs them into a staging buffer and, once the
//           receiver's cursor leaves room, copies them to where its own LlCursor places them with
//           8-byte stores (a socket may write a line in pieces; the executor must never see half
//           a line).
//   Peer state: the sender's PeerState word travels as a tag kTagState message when it leaves;
//           the receiver leaves by sending its PeerState as the backend's farewell and closing
//           its end. A closed or failed connection marks the peer gone in the local FIFO (with
//           the farewell's state when one came, else kGoneExited), so the executor's wait ends
//           with ccRemoteError naming the peer (or the root cause it left for); a peer that
//           vanishes silently ends in the executor's ccTimeout.
// Flow control is the receiver's slots: its proxy posts a receive only for a free slot, and the
// network holds the rest.
#include "transport/net/net_transport.h"

#include <poll.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/futex.h"
#include "common/log.h"
#include "device/call_tag.h"
#include "proxy/proxy.h"
#include "transport/net/net.h"
#include "transport/transport.h"

namespace collcomm::detail {
namespace {

// The backend device every connection uses (COLLCOMM_SOCKET_IFNAME picks the interface).
constexpr int kNetDev = 0;
constexpr uint32_t kTagSimple = 0;
constexpr uint32_t kTagLl = 1;
constexpr uint32_t kTagState = 2;
// LL steps on the network at once per connection, of the FIFO's kLlSteps: with the Simple steps
// and the state message they stay within the backend's kNetMaxRequests, so a receive is never
// short of a request while the messages it would match wait behind it.
constexpr int kLlInFlight = kNumSteps;
static_assert(kNumSteps + kLlInFlight + 1 <= kNetMaxRequests);

static_assert(kNetHandleBytes <= sizeof(ConnDesc::data));

// A receiving connection whose communicator runs no operation reads its socket once per this many
// proxy rounds (see NetConnection::idleRound).
constexpr uint32_t kIdleRoundsPerRead = 64;

uint64_t loadAcquire(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
uint64_t loadRelaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
void storeRelease(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
void storeRelaxed(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

// Marks the peer gone in our FIFO unless a state is already there (the first cause stays).
void markGone(uint32_t* word, uint32_t state) {
  uint32_t active = kPeerActive;
  __atomic_compare_exchange_n(word, &active, state, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

// Deregisters a comm's memory and closes it: what every end of a NET comm comes to.
void closeComm(const NetOpsV1* net, void* comm, bool isSend, void* const (&mrs)[2]) {
  for (void* mr : mrs)
    if (mr != nullptr) (void)net->deregMr(comm, mr);
  (void)(isSend ? net->closeSend(comm) : net->closeRecv(comm));
}

// The close of a receiving comm whose side left, handed from the proxy's round to after it
// (proxyAfterRound) so that a teardown does not wait for it under the proxy's lock: it deregisters
// the FIFO's memory and closes the comm, once, run by whichever comes first, the deferred work or
// the connection's destructor. The destructor waits for a close already running, as the memory it
// frees may still receive until the close has cancelled what was posted.
struct DeferredRecvClose {
  const NetOpsV1* net;
  void* comm;
  void* mrs[2];
  std::atomic<int> state{0};  // 0 pending, 1 running, 2 done

  // Runs the close unless someone else has claimed it; returns whether this call ran it.
  bool runOnce() {
    int pending = 0;
    if (!state.compare_exchange_strong(pending, 1, std::memory_order_acq_rel)) return false;
    closeComm(net, comm, /*isSend=*/false, mrs);
    state.store(2, std::memory_order_release);
    return true;
  }
  // Waits for the close another thread claimed; false when it has not finished within the bound.
  bool waitDone(double seconds) const {
    const Deadline until = Deadline::afterSeconds(seconds);
    while (state.load(std::memory_order_acquire) != 2) {
      if (until.expired()) return false;
      poll(nullptr, 0, 1);
    }
    return true;
  }
};

class NetConnection final : public FifoMemory, public ProxyClient {
 public:
  NetConnection(const NetBlockMemory& memory, bool isSend, const FifoLayout& layout, const PeerInfo& self,
                const PeerInfo& peer, const ConnSetup& setup)
      : memory_(memory),
        device_(self.device),
        isSend_(isSend),
        layout_(layout),
        peerRank_(peer.rank),
        opsRunning_(setup.opsRunning),
        net_(&selectedNet()) {}

  ~NetConnection() override {
    // Each phase's time is logged (INFO, NET): a teardown is part of ccCommAbort's bounded time.
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    // A sender going away normally first lets the proxy send what the executor already published
    // (its operation returned once the steps were in the FIFO); not when it left (abort, failure).
    if (registered_ && isSend_ && !isGone(__atomic_load_n(&ctrl_->senderState, __ATOMIC_ACQUIRE))) {
      const Deadline until = Deadline::afterSeconds(2.0);
      while (!sentAll() && !failed_.load(std::memory_order_acquire) && !until.expired()) poll(nullptr, 0, 1);
    }
    const auto t1 = Clock::now();
    if (registered_) proxyRemove(this);
    const auto t2 = Clock::now();
    if (registered_ && comm_ != nullptr && !failed_.load(std::memory_order_acquire)) leaveWord();
    if (connecting_) net_->abandonConnect(handle_);
    if (deferredClose_ != nullptr && !deferredClose_->runOnce() && !deferredClose_->waitDone(2.0)) {
      // The network may still write into receives posted in the block: it stays allocated.
      CC_WARN("NET connection from rank %d: the network's close did not finish within 2 s; its %zu-byte FIFO block "
              "stays allocated", peerRank_, layout_.totalBytes());
      block_ = nullptr;
    }
    const auto t3 = Clock::now();
    if (comm_ != nullptr) closeComm(net_, comm_, isSend_, {blockMr_, stageMr_});
    if (listen_ != nullptr) (void)net_->closeListen(listen_);
    if (block_ != nullptr) memory_.release(block_, device_);
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    CC_INFO(kSubsysNet,
            "NET connection %s rank %d closed in %.1f ms: draining %.1f, leaving the proxy %.1f, last word %.1f, "
            "closing %.1f",
            isSend_ ? "to" : "from", peerRank_, ms(t0, Clock::now()), ms(t0, t1), ms(t1, t2), ms(t2, t3),
            ms(t3, Clock::now()));
  }

  Status allocate() {
    const size_t bytes = layout_.totalBytes();
    void* block = nullptr;
    CC_CHECK(memory_.allocate(bytes, device_, &block));
    block_ = static_cast<char*>(block);
    memset(block_, 0, bytes);
    ctrl_ = reinterpret_cast<FifoCtrl*>(block_);
    simpleBuf_ = block_ + layout_.simpleOffset();
    llBuf_ = reinterpret_cast<uint64_t*>(block_ + layout_.llOffset());
    if (!isSend_) llStage_.assign(kLlInFlight * layout_.llStepLines, 0);
    return kOk;
  }

  void* base() override { return block_; }

  // Receiver: listens; the handle goes into the connection description.
  Status listen(const ConnSetup& setup, void* handle) {
    CC_CHECK(net_->init());
    const NetSecret secret{{setup.secret[0], setup.secret[1]}};
    return net_->listen(kNetDev, secret, handle, &listen_);
  }

  // Sender: connects to the receiver's handle, up to the deadline.
  Status connect(const ConnSetup& setup, const void* handle, const PeerInfo& peer) {
    CC_CHECK(net_->init());
    const NetSecret secret{{setup.secret[0], setup.secret[1]}};
    memcpy(handle_, handle, kNetHandleBytes);
    connecting_ = true;
    while (comm_ == nullptr) {
      Status s = net_->connect(kNetDev, secret, handle_, &comm_);
      if (!isOk(s)) {
        connecting_ = false;  // the backend dropped the handshake
        return s;
      }
      if (comm_ != nullptr) break;
      if (setup.deadline.expired())
        return CC_ERROR(Status::kTimeout,
                        "NET connection to rank %d (host %s) was not established before the deadline; check that "
                        "COLLCOMM_SOCKET_IFNAME names an interface the hosts can reach each other on",
                        peer.rank, peer.host);
      poll(nullptr, 0, 1);
    }
    connecting_ = false;
    return start();
  }

  // Receiver: accepts the sender's connection, up to the deadline.
  Status accept(const ConnSetup& setup, const PeerInfo& peer) {
    while (comm_ == nullptr) {
      CC_CHECK(net_->accept(listen_, &comm_));
      if (comm_ != nullptr) break;
      if (setup.deadline.expired())
        return CC_ERROR(Status::kTimeout,
                        "rank %d (host %s) did not open its NET connection to this rank before the deadline",
                        peer.rank, peer.host);
      poll(nullptr, 0, 1);
    }
    (void)net_->closeListen(listen_);
    listen_ = nullptr;
    void* buf = &stateIn_;
    const size_t size = sizeof(stateIn_);
    const uint32_t tag = kTagState;
    CC_CHECK(net_->irecv(comm_, 1, &buf, &size, &tag, nullptr, &stateReq_));
    return start();
  }

  bool progress() override {
    if (failed_ || comm_ == nullptr) return false;
    return isSend_ ? progressSend() : progressRecv();
  }

  bool progressSends() override { return isSend_ && progress(); }

  bool hasWork() const override {
    if (failed_ || comm_ == nullptr) return false;
    if (!isSend_) return isGone(__atomic_load_n(&ctrl_->receiverState, __ATOMIC_ACQUIRE));
    if (sDone_ < sPosted_ || lDone_ < lPosted_ || stateReq_ != nullptr) return true;
    if (loadAcquire(&ctrl_->simpleTail) > sPosted_) return true;
    if (static_cast<uint32_t>(loadAcquire(&ctrl_->llBytes[lPosted_ % kLlSteps]) >> 32) ==
        static_cast<uint32_t>(lPosted_ + 1))
      return true;
    return !stateSent_ && isGone(__atomic_load_n(&ctrl_->senderState, __ATOMIC_ACQUIRE));
  }

 private:
  // Sender, from any thread: every step the executor published has been handed to the network
  // (the proxy advances the heads only when a send completes).
  bool sentAll() const {
    if (loadAcquire(&ctrl_->simpleHead) < loadAcquire(&ctrl_->simpleTail)) return false;
    const uint64_t llHead = loadAcquire(&ctrl_->llHead);
    return static_cast<uint32_t>(loadAcquire(&ctrl_->llBytes[llHead % kLlSteps]) >> 32) !=
           static_cast<uint32_t>(llHead + 1);
  }

  // Destructor, after the proxy let go: a side that left (abort, failure) and whose proxy did not
  // get to say so yet (ccCommAbort frees the communicator right after marking it gone) says it
  // now, best effort and without waiting: the receiver its farewell, the sender its state message
  // (handed to the kernel if the socket has room; closing delivers what the kernel holds).
  void leaveWord() {
    if (!isSend_) {
      const uint32_t own = __atomic_load_n(&ctrl_->receiverState, __ATOMIC_ACQUIRE);
      if (isGone(own) && net_->farewell != nullptr) (void)net_->farewell(comm_, own);
      return;
    }
    const uint32_t own = __atomic_load_n(&ctrl_->senderState, __ATOMIC_ACQUIRE);
    if (stateSent_ || !isGone(own)) return;
    stateOut_ = own;
    void* req = nullptr;
    if (isOk(net_->isend(comm_, &stateOut_, sizeof(stateOut_), kTagState, nullptr, &req)) && req != nullptr) {
      bool done = false;
      (void)net_->test(req, &done, nullptr);
      (void)net_->test(req, &done, nullptr);
    }
  }

  Status start() {
    CC_CHECK(net_->regMr(comm_, block_, layout_.totalBytes(), NetMemType::kHost, &blockMr_));
    if (!llStage_.empty())
      CC_CHECK(net_->regMr(comm_, llStage_.data(), llStage_.size() * sizeof(uint64_t), NetMemType::kHost, &stageMr_));
    proxyAdd(this);
    registered_ = true;
    return kOk;
  }

  // The connection broke: the peer is gone as far as our executor is concerned. Called only at the
  // end of a progress round, after every request that completed before the break was landed and
  // published: the release here orders those steps before the departure, so an executor that sees
  // the peer gone (acquire) also sees every step that arrived (see HostPlatform::healthy).
  //
  // Who left and why: a receiver that leaves (its operation failed, its communicator was aborted)
  // first sends its own PeerState as a farewell, which names the root cause as the SHM and P2P
  // transports would (a receiver that left because a third rank failed must not be blamed for it,
  // nor said to have exited when it was aborted). Without one the peer closed without a word: it
  // exited (or destroyed its communicator), or the link broke.
  bool fail() {
    failed_ = true;
    uint32_t state = goneState(peerRank_, kGoneExited);
    uint32_t word = 0;
    if (isSend_ && net_->peerFarewell != nullptr && comm_ != nullptr && net_->peerFarewell(comm_, &word) &&
        isGone(word))
      state = word;
    markGone(isSend_ ? &ctrl_->receiverState : &ctrl_->senderState, state);
    return true;
  }

  // Tests one request; false when not done, or when the connection broke (then broken_ is set and
  // the round goes on harvesting the requests that did complete; progress() fails at its end).
  bool testDone(void* req, size_t* size) {
    bool done = false;
    if (!isOk(net_->test(req, &done, size))) {
      broken_ = true;
      return false;
    }
    return done;
  }

  // Ends a progress round: a connection that broke during it fails now, after the harvest.
  bool endRound(bool moved) { return broken_ ? fail() : moved; }

  bool progressSend() {
    bool moved = false;
    const uint32_t stepBytes = static_cast<uint32_t>(layout_.simpleStepBytes);
    const uint64_t tail = loadAcquire(&ctrl_->simpleTail);
    while (!broken_ && sPosted_ < tail && sPosted_ - sDone_ < kNumSteps) {
      const uint64_t slot = sPosted_ % kNumSteps;
      // The step leaves with its size word behind the payload (netStepMaxBytes left room for it).
      const uint64_t word = loadRelaxed(&ctrl_->simpleBytes[slot]);
      const size_t bytes = stepWordBytes(word);
      char* step = simpleBuf_ + slot * stepBytes;
      memcpy(step + bytes, &word, kStepWordBytes);
      void* req = nullptr;
      if (!isOk(net_->isend(comm_, step, bytes + kStepWordBytes, kTagSimple, blockMr_, &req))) {
        broken_ = true;
        break;
      }
      if (req == nullptr) break;
      sReq_[slot] = req;
      sPosted_++;
      moved = true;
    }
    while (sDone_ < sPosted_ && testDone(sReq_[sDone_ % kNumSteps], nullptr)) {
      sDone_++;
      storeRelease(&ctrl_->simpleHead, sDone_);
      wakeParked(&ctrl_->spaceBell);
      moved = true;
    }
    while (!broken_ && lPosted_ - lDone_ < kLlInFlight) {
      const uint64_t slot = lPosted_ % kLlSteps;
      const uint32_t flag = static_cast<uint32_t>(lPosted_ + 1);
      const uint64_t word = loadAcquire(&ctrl_->llBytes[slot]);
      if (static_cast<uint32_t>(word >> 32) != flag) break;
      const size_t nLines = llLinesFor(static_cast<uint32_t>(word));
      LlCursor next = lCursor_;
      uint64_t* lines = llBuf_ + next.place(nLines, ringLines());
      bool complete = true;
      for (size_t i = 0; i < nLines && complete; ++i) complete = static_cast<uint32_t>(loadRelaxed(&lines[i]) >> 32) == flag;
      if (!complete) break;
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      void* req = nullptr;
      if (!isOk(net_->isend(comm_, lines, nLines * sizeof(uint64_t), kTagLl, blockMr_, &req))) {
        broken_ = true;
        break;
      }
      if (req == nullptr) break;
      lCursor_ = next;
      lLineEnd_[lPosted_ % kLlInFlight] = next.line;
      lReq_[lPosted_ % kLlInFlight] = req;
      lPosted_++;
      moved = true;
    }
    while (lDone_ < lPosted_ && testDone(lReq_[lDone_ % kLlInFlight], nullptr)) {
      storeRelease(&ctrl_->llHeadLine, lLineEnd_[lDone_ % kLlInFlight]);
      lDone_++;
      storeRelease(&ctrl_->llHead, lDone_);
      wakeParked(&ctrl_->spaceBell);
      moved = true;
    }
    if (!broken_ && !stateSent_) {
      const uint32_t own = __atomic_load_n(&ctrl_->senderState, __ATOMIC_ACQUIRE);
      if (isGone(own)) {
        stateOut_ = own;
        if (!isOk(net_->isend(comm_, &stateOut_, sizeof(stateOut_), kTagState, nullptr, &stateReq_))) broken_ = true;
        stateSent_ = stateReq_ != nullptr;
        moved = true;
      }
    }
    if (stateReq_ != nullptr && testDone(stateReq_, nullptr)) stateReq_ = nullptr;
    return endRound(moved);
  }

  // Receiver: lands and publishes every step whose receive is done, in order; true if any.
  bool harvestRecv() {
    bool moved = false;
    size_t size = 0;
    while (sDone_ < sPosted_ && testDone(sReq_[sDone_ % kNumSteps], &size)) {
      // The sender's size word came behind the payload: the executor checks its call as over P2P.
      uint64_t word = 0;
      if (size >= kStepWordBytes)
        memcpy(&word, simpleBuf_ + (sDone_ % kNumSteps) * layout_.simpleStepBytes + size - kStepWordBytes,
               kStepWordBytes);
      if (size < kStepWordBytes || stepWordBytes(word) != size - kStepWordBytes) {
        CC_WARN("NET connection from rank %d: step %llu arrived as %zu bytes, which its size word does not describe",
                peerRank_, static_cast<unsigned long long>(sDone_), size);
        broken_ = true;
        break;
      }
      storeRelaxed(&ctrl_->simpleBytes[sDone_ % kNumSteps], word);
      sDone_++;
      storeRelease(&ctrl_->simpleTail, sDone_);
      wakeParked(&ctrl_->dataBell);
      moved = true;
    }
    while (lDone_ < lPosted_ && roomToLand() && testDone(lReq_[lDone_ % kLlInFlight], &size)) {
      const uint64_t* src = llStage_.data() + (lDone_ % kLlInFlight) * layout_.llStepLines;
      uint64_t* dst = llBuf_ + lCursor_.place(size / sizeof(uint64_t), ringLines());
      for (size_t i = 0; i < size / sizeof(uint64_t); ++i) storeRelaxed(&dst[i], src[i]);
      lDone_++;
      wakeParked(&ctrl_->dataBell);
      moved = true;
    }
    if (stateReq_ != nullptr && testDone(stateReq_, nullptr)) {
      stateReq_ = nullptr;
      if (isGone(stateIn_)) markGone(&ctrl_->senderState, stateIn_);
      moved = true;
    }
    return moved;
  }

  // Receiver: posts one receive of up to `cap` bytes into `buf`; false when the backend takes no
  // more now or the connection broke (broken_).
  bool postRecv(void* buf, size_t cap, uint32_t tag, void* mr, void** req) {
    *req = nullptr;
    if (!isOk(net_->irecv(comm_, 1, &buf, &cap, &tag, &mr, req))) {
      broken_ = true;
      return false;
    }
    return *req != nullptr;
  }

  bool progressRecv() {
    if (const uint32_t own = __atomic_load_n(&ctrl_->receiverState, __ATOMIC_ACQUIRE); isGone(own)) {
      // This side left: the farewell tells the sender why, closing that we are gone (its sends
      // fail; it marks us gone with the farewell's cause). The close waits (bounded) for a
      // goodbye to leave and closes endpoints: it runs after the round, outside the proxy's lock,
      // so that this communicator's teardown (proxyRemove) does not wait for it.
      if (net_->farewell != nullptr) (void)net_->farewell(comm_, own);
      deferredClose_ = std::make_shared<DeferredRecvClose>();
      deferredClose_->net = net_;
      deferredClose_->comm = comm_;
      deferredClose_->mrs[0] = blockMr_;
      deferredClose_->mrs[1] = stageMr_;
      proxyAfterRound([close = deferredClose_] { (void)close->runOnce(); });
      comm_ = nullptr;
      blockMr_ = stageMr_ = nullptr;
      return true;
    }
    if (idleRound()) return false;
    bool moved = false;
    const uint32_t stepBytes = static_cast<uint32_t>(layout_.simpleStepBytes);
    const uint64_t head = loadAcquire(&ctrl_->simpleHead);
    while (!broken_ && sPosted_ - sDone_ < kNumSteps && sPosted_ < head + kNumSteps) {
      const uint64_t slot = sPosted_ % kNumSteps;
      if (!postRecv(simpleBuf_ + slot * stepBytes, stepBytes, kTagSimple, blockMr_, &sReq_[slot])) break;
      sPosted_++;
      moved = true;
    }
    const uint64_t llHead = loadAcquire(&ctrl_->llHead);
    const size_t lineBytes = layout_.llStepLines * sizeof(uint64_t);
    while (!broken_ && lineBytes != 0 && lPosted_ - lDone_ < kLlInFlight && lPosted_ < llHead + kLlSteps) {
      const uint64_t slot = lPosted_ % kLlInFlight;
      if (!postRecv(llStage_.data() + slot * layout_.llStepLines, lineBytes, kTagLl, stageMr_, &lReq_[slot])) break;
      lPosted_++;
      moved = true;
    }
    moved |= harvestRecv();
    // A progress call made by a later test of this round (the backend reads for every request of
    // the connection at once) may have completed requests of a queue already tested, and then
    // found the connection closed: take those too before the round fails.
    while (broken_ && harvestRecv()) moved = true;
    return endRound(moved);
  }

  // Receiver: true for a round that skips this connection because no operation of its
  // communicator runs (every kIdleRoundsPerRead-th such round still reads the socket, so a peer's
  // departure is noticed while idle). Whatever arrives meanwhile waits in the kernel until an
  // operation starts; the rounds that operations of other communicators run cost a socket read
  // each only for the connections they use.
  bool idleRound() {
    if (opsRunning_ == nullptr || opsRunning_->load(std::memory_order_relaxed) != 0) return false;
    return ++idleRounds_ % kIdleRoundsPerRead != 0;
  }

  uint32_t ringLines() const { return static_cast<uint32_t>(layout_.llRingLines()); }

  // Receiver: an LL step lands only where the executor has read everything (its cursor leaves
  // room for the largest step); until then it waits in staging. The executor's cursor word is
  // read (a miss: it is written every step) only when the last value seen says no room.
  bool roomToLand() {
    const uint32_t maxLines = static_cast<uint32_t>(layout_.llStepLines);
    if (lCursor_.fits(lHeadLineSeen_, maxLines, ringLines())) return true;
    lHeadLineSeen_ = loadAcquire(&ctrl_->llHeadLine);
    return lCursor_.fits(lHeadLineSeen_, maxLines, ringLines());
  }

  const NetBlockMemory& memory_;
  const int device_;  // the rank's, for memory_
  const bool isSend_;
  const FifoLayout layout_;
  const int peerRank_;
  const std::atomic<int>* const opsRunning_;  // the communicator's running operations (may be null)
  const NetOpsV1* net_;
  char* block_ = nullptr;
  FifoCtrl* ctrl_ = nullptr;
  char* simpleBuf_ = nullptr;
  uint64_t* llBuf_ = nullptr;
  std::vector<uint64_t> llStage_;
  void* listen_ = nullptr;
  void* comm_ = nullptr;
  void* blockMr_ = nullptr;  // the FIFO block's registration with the backend (null: none needed)
  void* stageMr_ = nullptr;  // receiver: the LL staging buffer's
  std::shared_ptr<DeferredRecvClose> deferredClose_;  // receiver whose side left: its close (proxy thread)
  unsigned char handle_[kNetHandleBytes] = {};
  bool connecting_ = false;
  bool registered_ = false;
  std::atomic<bool> failed_{false};
  bool broken_ = false;  // proxy thread: the connection broke in this round (see testDone)
  uint64_t sPosted_ = 0, sDone_ = 0, lPosted_ = 0, lDone_ = 0;
  uint32_t idleRounds_ = 0;  // receiver: rounds seen while the communicator was idle
  void* sReq_[kNumSteps] = {};
  void* lReq_[kLlInFlight] = {};
  LlCursor lCursor_;                      // where this side's next LL step's lines are
  uint64_t lLineEnd_[kLlInFlight] = {};   // sender: the cursor line after each LL step on the wire
  uint64_t lHeadLineSeen_ = 0;            // receiver: the executor's llHeadLine as last read
  uint32_t stateOut_ = 0;
  uint32_t stateIn_ = 0;
  void* stateReq_ = nullptr;
  bool stateSent_ = false;
};

// Host ranks' blocks: ordinary memory.
Status hostAllocate(size_t bytes, int, void** block) {
  *block = aligned_alloc(kFifoAlign, bytes);
  if (*block == nullptr) return CC_ERROR(Status::kSystemError, "could not allocate %zu bytes for a NET FIFO", bytes);
  return kOk;
}
void hostRelease(void* block, int) { free(block); }
constexpr NetBlockMemory kHostBlocks{hostAllocate, hostRelease};

Status netCreateFifo(const FifoLayout& layout, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                     std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  return netCreateFifoIn(kHostBlocks, layout, self, peer, setup, mem, desc);
}

Status netAttachFifo(const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer, const ConnSetup& setup,
                     std::unique_ptr<FifoMemory>* mem) {
  return netAttachFifoIn(kHostBlocks, desc, self, peer, setup, mem);
}

}  // namespace

const char kNetTransportName[] = "NET";

bool netCanConnect(const PeerInfo&, const PeerInfo&) { return true; }

// Simple steps the network moves in whole packets (net.h wholeSegmentBytes): on loopback a 128 KiB
// step with its header left a 122-byte third segment, and the steps sized to two full ones made a
// 16 MiB allreduce about 8% faster (docs/lab/2026-11-24.md, "Whole segments").
// A step's payload leaves room in its slot for the size word that follows it on the wire.
size_t netStepMaxBytes(const FifoLayout& layout) {
  const NetOpsV1& net = selectedNet();
  size_t wire = layout.simpleStepBytes;
  if (net.wholeSegmentBytes != nullptr)
    if (const size_t whole = net.wholeSegmentBytes(kNetDev, layout.simpleStepBytes, 64); whole >= 64 + kStepWordBytes)
      wire = whole;                          // a plugin's smaller answer would leave no payload: the slot decides
  return (wire - kStepWordBytes) / 64 * 64;  // slots hold at least 4 KiB (core/init.cc fifoSizesFromParams)
}

Status netCreateFifoIn(const NetBlockMemory& memory, const FifoLayout& layout, const PeerInfo& self,
                       const PeerInfo& peer, const ConnSetup& setup, std::unique_ptr<FifoMemory>* mem, ConnDesc* desc) {
  auto conn = std::make_unique<NetConnection>(memory, false, layout, self, peer, setup);
  CC_CHECK(conn->allocate());
  memset(desc, 0, sizeof(*desc));
  CC_CHECK(conn->listen(setup, desc->data));
  desc->bytes = layout.totalBytes();
  *mem = std::move(conn);
  return kOk;
}

Status netAttachFifoIn(const NetBlockMemory& memory, const ConnDesc& desc, const PeerInfo& self, const PeerInfo& peer,
                       const ConnSetup& setup, std::unique_ptr<FifoMemory>* mem) {
  const FifoLayout layout{desc.simpleStepBytes, desc.llStepLines};
  auto conn = std::make_unique<NetConnection>(memory, true, layout, self, peer, setup);
  CC_CHECK(conn->allocate());
  CC_CHECK(conn->connect(setup, desc.data, peer));
  *mem = std::move(conn);
  return kOk;
}

Status netSenderAttached(FifoMemory& mem, const PeerInfo& peer, const ConnSetup& setup) {
  return static_cast<NetConnection&>(mem).accept(setup, peer);
}

const TransportOps kNetTransport = {
    .name = kNetTransportName,
    .canConnect = netCanConnect,
    .createFifo = netCreateFifo,
    .attachFifo = netAttachFifo,
    .senderAttached = netSenderAttached,
    .stepMaxBytes = netStepMaxBytes,
    .proxied = true,
};

}  // namespace collcomm::detail
