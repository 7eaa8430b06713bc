// Primitives: the verbs ring algorithms are written in. Each moves `n` elements between the user's
// buffers and one channel's connections (receive from the previous rank, send to the next), in as
// many protocol steps as the data needs; both neighbours split identically, so their steps match.
//
//   send(src)                    pre(src)                    -> next
//   copySend(src, dst)           pre(src)                    -> dst, next
//   recv(dst)                    prev                        -> dst
//   recvCopySend(dst)            prev                        -> dst, next
//   recvReduceSend(src)          prev (+) pre(src)           -> next
//   recvReduceCopy(src, dst)     prev (+) pre(src)           -> dst
//   recvReduceCopySend(src,dst)  prev (+) pre(src)           -> dst, next
//   sendFromOutput(out)          out                         -> next
//   recvReduceSendFromOutput(out)     prev (+) out           -> next
//   recvReduceCopyFromOutput(out,dst) prev (+) out           -> dst
// The FromOutput verbs read a buffer that holds values already pre-processed (a partial or final
// result in the user's output, as trees forward them), so Fn::preOp is not applied to it again.
// `post` flags apply Fn::postOp to what a verb stores. After a failed wait (abort, dead peer,
// deadline; recorded by the platform) every later verb is a no-op, so an algorithm simply runs to
// its end and the executor reports the platform's status.
//
// Tier: data path. No allocation, no syscalls (the platform's slow wait path aside).
#pragma once

#include <cstddef>

#include "common/host_device.h"
#include "device/fifo.h"
#include "device/protocols.h"
#include "device/reduce_copy.h"

namespace collcomm::detail {

template <class T, class Fn, class Proto, class Platform>
class Primitives {
 public:
  // callTag: the call's (call_tag.h), which every step carries and checks.
  CC_HD Primitives(Platform& plat, const Fn& fn, SendConn* send, RecvConn* recv, uint32_t callTag)
      : plat_(plat), fn_(fn), send_(send), recv_(recv), callTag_(callTag) {
    const size_t sendStep = send != nullptr ? Proto::stepBytes(*send) : ~size_t{0};
    const size_t recvStep = recv != nullptr ? Proto::stepBytes(*recv) : ~size_t{0};
    stepElems_ = (sendStep < recvStep ? sendStep : recvStep) / sizeof(T);
    // Steps stream past the cache where the platform says so (host: while the receiver finds
    // this core far, device/host/core_distance.h); decided once per operation.
    if constexpr (requires { plat.streamsStepsTo(*send); })
      streamOut_ = send != nullptr && !Proto::kNeedsStaging && plat.streamsStepsTo(*send);
  }

  CC_HD size_t stepElems() const { return stepElems_; }
  CC_HD bool failed() const { return failed_; }

  CC_HD void send(const T* src, size_t n) { loop<false, true>(src, nullptr, n, false); }
  CC_HD void copySend(const T* src, T* dst, size_t n, bool post) { loop<false, true>(src, dst, n, post); }
  CC_HD void recv(T* dst, size_t n, bool post) { loop<true, false>(nullptr, dst, n, post); }
  CC_HD void recvCopySend(T* dst, size_t n) { loop<true, true>(nullptr, dst, n, false); }
  CC_HD void recvReduceSend(const T* src, size_t n) { loop<true, true>(src, nullptr, n, false); }
  CC_HD void recvReduceCopy(const T* src, T* dst, size_t n, bool post) { loop<true, false>(src, dst, n, post); }
  CC_HD void recvReduceCopySend(const T* src, T* dst, size_t n, bool post) { loop<true, true>(src, dst, n, post); }
  CC_HD void sendFromOutput(const T* out, size_t n) { loop<false, true, false>(out, nullptr, n, false); }
  CC_HD void recvReduceSendFromOutput(const T* out, size_t n) { loop<true, true, false>(out, nullptr, n, false); }
  CC_HD void recvReduceCopyFromOutput(const T* out, T* dst, size_t n, bool post) {
    loop<true, false, false>(out, dst, n, post);
  }

 private:
  // Pre-op is applied to the user's source exactly when it is read: each rank's own contribution
  // enters the reduction once (kPreSrc false: the source is an output, pre-processed already).
  template <bool kRecv, bool kSend, bool kPreSrc = true>
  CC_HD void loop(const T* src, T* dst, size_t n, bool post) {
    for (size_t done = 0; done < n && !failed_; done += stepElems_) {
      const size_t len = n - done < stepElems_ ? n - done : stepElems_;
      step<kRecv, kSend, kPreSrc>(src != nullptr ? src + done : nullptr, dst != nullptr ? dst + done : nullptr, len,
                                  post);
    }
  }

  template <bool kRecv, bool kSend, bool kPreSrc>
  CC_HD void step(const T* src, T* dst, size_t len, bool post) {
    const T* in = nullptr;
    T* out = nullptr;
    if (kRecv) {
      in = static_cast<const T*>(Proto::acquireRecv(plat_, *recv_, len * sizeof(T), callTag_));
      if (in == nullptr) {
        failed_ = true;
        return;
      }
    }
    if (kSend) {
      out = static_cast<T*>(Proto::acquireSend(plat_, *send_));
      if (out == nullptr) {
        failed_ = true;
        return;
      }
    }
    const T* src0 = kRecv ? in : src;
    const bool pre0 = !kRecv && kPreSrc;
    const bool pre1 = kPreSrc;
    const T* src1 = kRecv ? src : nullptr;
    T* dst0 = dst != nullptr ? dst : out;
    T* dst1 = dst != nullptr ? out : nullptr;
    bool done = false;
    if constexpr (requires { plat_.streamsResults(); }) {
      // A platform that can write past the cache (host: large operations) does so for the user's
      // buffer, unless the result overwrites the source just read (in place: the line is cached
      // already), and for the FIFO slot while the next rank's core is far (streamOut_).
      const bool streamDst = dst != nullptr && dst != src && plat_.streamsResults();
      const bool streamOut = kSend && streamOut_;
      if (streamDst || streamOut) {
        plat_.reduceCopyStreaming(fn_, len, src0, pre0 && src0 != nullptr, src1, pre1 && src1 != nullptr, dst0,
                                  dst != nullptr ? streamDst : streamOut, dst1, streamOut, post);
        done = true;
      }
    }
    if (!done) {
      // A platform may route the step's copy through a reduceCopy of its own (CUDA's tree kernel:
      // one out-of-line copy for all its verbs, which nvcc would otherwise compile once per verb).
      if constexpr (requires { plat_.reduceCopy(fn_, len, src0, false, src1, false, dst0, dst1, post); })
        plat_.reduceCopy(fn_, len, src0, pre0 && src0 != nullptr, src1, pre1 && src1 != nullptr, dst0, dst1, post);
      else
        reduceCopy(fn_, plat_.tid(), plat_.nthreads(), len, src0, pre0 && src0 != nullptr, src1,
                   pre1 && src1 != nullptr, dst0, dst1, post);
    }
    if (kRecv) Proto::releaseRecv(plat_, *recv_);
    if (kSend) Proto::postSend(plat_, *send_, out, len * sizeof(T), callTag_);
  }

  Platform& plat_;
  const Fn& fn_;
  SendConn* send_;
  RecvConn* recv_;
  uint32_t callTag_;
  size_t stepElems_ = 0;
  bool failed_ = false;
  bool streamOut_ = false;
};

}  // namespace collcomm::detail
