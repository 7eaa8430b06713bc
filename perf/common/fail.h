// How the perf binaries stop on an error: one message naming the host, the call and the
// library's sentence, then the process exits with status 1. Exiting (rather than unwinding every
// rank thread) is deliberate: other ranks may be inside a collective with this one, and the
// library turns a departed peer into an error on their side instead of a hang.
#pragma once

#include "collcomm.h"

namespace collcomm::perf {

// Runs before the process exits on a failure (the report flushes what it has).
void setFailureHook(void (*hook)());

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void failCall(const char* call, ccResult_t result, const char* file, int line);

}  // namespace collcomm::perf

#define CC_PERF_CHECK(call)                                                                               \
  do {                                                                                                    \
    const ccResult_t ccPerfResult_ = (call);                                                              \
    if (ccPerfResult_ != ccSuccess) ::collcomm::perf::failCall(#call, ccPerfResult_, __FILE__, __LINE__); \
  } while (0)
