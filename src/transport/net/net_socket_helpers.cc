// The socket backend's helper threads: each drives its share of a connection's data sockets,
// moving the chunks that postChunks deals to it (the proxy thread posts, the helper moves, the
// request's pendingChunks tells the proxy when all of a message's chunks are done).
//
// Helper threads poll while they hold chunks (yielding between rounds that moved nothing) and
// sleep only after kLinger without any; a poster wakes only a sleeping helper.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "transport/net/net_socket_internal.h"
#include "transport/net/net_socket_wire.h"

namespace collcomm::detail::netsocket {
namespace {

// How long an idle helper thread keeps polling before it sleeps.
constexpr auto kLinger = std::chrono::milliseconds(5);

bool anyQueued(const Helper* h) {
  for (const auto& q : h->queues)
    if (!q.empty()) return true;
  return false;
}

// A helper polls its sockets while it has chunks (yielding the core between rounds that moved
// nothing), keeps polling for kLinger after its last chunk, then sleeps until a chunk is posted.
void helperLoop(SocketComm* comm, Helper* h) {
  std::vector<Chunk*> fronts(h->nSocks);
  Clock::time_point lastBusy = Clock::now();
  for (;;) {
    bool any = false;
    {
      std::unique_lock<std::mutex> lock(h->mu);
      if (h->stop) return;
      for (int s = 0; s < h->nSocks; ++s) {
        fronts[s] = h->queues[s].empty() ? nullptr : &h->queues[s].front();
        any |= fronts[s] != nullptr;
      }
      if (!any && Clock::now() - lastBusy >= kLinger) {
        h->sleeping = true;
        h->cv.wait(lock, [&] { return h->stop || anyQueued(h); });
        h->sleeping = false;
        lastBusy = Clock::now();
        continue;
      }
    }
    if (!any) {
      sched_yield();
      continue;
    }
    lastBusy = Clock::now();
    bool progressed = false;
    for (int s = 0; s < h->nSocks; ++s) {
      Chunk* c = fronts[s];
      if (c == nullptr) continue;
      const int fd = comm->data[h->firstSock + s].fd();
      const size_t before = c->done;
      IoStatus st = comm->isSend ? sendOnce(fd, c->ptr + c->done, c->size - c->done, &c->done)
                                 : recvOnce(fd, c->ptr + c->done, c->size - c->done, &c->done);
      if (!st.ok()) {
        int expected = 0;
        comm->ioError.compare_exchange_strong(expected, st.err != 0 ? st.err : -1);
        c->req->chunkFailed.store(true, std::memory_order_relaxed);  // published by the fetch_sub below
        c->done = c->size;  // the comm has failed; finish the chunk so nothing waits on it
      }
      progressed |= c->done != before;
      if (c->done == c->size) {
        Request* r = c->req;
        {
          std::lock_guard<std::mutex> lock(h->mu);
          h->queues[s].pop_front();
        }
        r->pendingChunks.fetch_sub(1, std::memory_order_release);
      }
    }
    if (!progressed) sched_yield();
  }
}

}  // namespace

void startHelpers(SocketComm* comm, int nThreads, int nSocksPerThread) {
  comm->nSocksPerThread = nSocksPerThread;
  for (int t = 0; t < nThreads; ++t) {
    auto h = std::make_unique<Helper>();
    h->firstSock = t * nSocksPerThread;
    h->nSocks = nSocksPerThread;
    h->queues.resize(nSocksPerThread);
    comm->helpers.push_back(std::move(h));
  }
  for (auto& h : comm->helpers) h->thread = std::thread(helperLoop, comm, h.get());
}

void stopHelpers(SocketComm* comm) {
  for (auto& h : comm->helpers) {
    {
      std::lock_guard<std::mutex> lock(h->mu);
      h->stop = true;
    }
    h->cv.notify_all();
  }
  for (auto& h : comm->helpers) h->thread.join();
}

// Cuts a message into chunks over the data sockets (the same way on both sides).
void postChunks(SocketComm* comm, Request* r) {
  const size_t nSocks = comm->data.size();
  size_t chunk = std::max(kInlineBytes, (r->size + nSocks - 1) / nSocks);
  chunk = (chunk + 63) / 64 * 64;
  const int nChunks = static_cast<int>((r->size + chunk - 1) / chunk);
  r->pendingChunks.store(nChunks, std::memory_order_relaxed);
  for (int i = 0; i < nChunks; ++i) {
    const size_t off = static_cast<size_t>(i) * chunk;
    const int sock = static_cast<int>((comm->nextSock + i) % nSocks);
    Helper& h = *comm->helpers[sock / comm->nSocksPerThread];
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(h.mu);
      h.queues[sock - h.firstSock].push_back(Chunk{r->data + off, std::min(chunk, r->size - off), 0, r});
      wake = h.sleeping;
    }
    if (wake) h.cv.notify_one();
  }
  comm->nextSock += static_cast<uint64_t>(nChunks);
}

}  // namespace collcomm::detail::netsocket
