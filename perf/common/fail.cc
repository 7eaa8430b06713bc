#include "common/fail.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>


namespace collcomm::perf {
namespace {

std::atomic<void (*)()> gHook{nullptr};
std::mutex gFailMu;  // one failing thread reports; the others wait for the exit

void hostName(char* out, size_t n) {
  gethostname(out, n - 1);
  out[n - 1] = '\0';
  if (char* dot = strchr(out, '.')) *dot = '\0';
}

bool sameFile(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

[[noreturn]] void finish(const char* msg) {
  gFailMu.lock();  // never released: the process ends below
  char host[256];
  hostName(host, sizeof(host));
  // stdout, where nccl-tests reports failures (scripts read it), and stderr for people when it
  // goes elsewhere.
  printf("%s: Test failure: %s\n", host, msg);
  fflush(stdout);
  if (!sameFile(1, 2)) fprintf(stderr, "%s: Test failure: %s\n", host, msg);
  if (void (*hook)() = gHook.load()) hook();
  fflush(nullptr);
  _exit(1);
}

}  // namespace

void setFailureHook(void (*hook)()) { gHook.store(hook); }

void fatal(const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  finish(msg);
}

void failCall(const char* call, ccResult_t result, const char* file, int line) {
  const char* why = ccGetLastError(nullptr);
  char msg[1400];
  snprintf(msg, sizeof(msg), "%s:%d %s returned %s (%s)", file, line, call, ccGetErrorString(result),
           why != nullptr && *why != '\0' ? why : "no further detail");
  finish(msg);
}

}  // namespace collcomm::perf
