/*
 * The version text, in one place: the library's COLLCOMM_DEBUG=VERSION banner (log.cc) and every
 * tool's --version (ccrun, cc-topo, the perf binaries, the examples) print it. Plain C, header-only,
 * so C programs outside the library can include it; needs only collcomm.h.
 */
#ifndef COLLCOMM_VERSION_TEXT_H_
#define COLLCOMM_VERSION_TEXT_H_

#include <stdio.h>

#include "collcomm.h"

/* "collcomm version X.Y.Z<suffix>" for a version code as ccGetVersion gives it. */
static inline void ccVersionText(int code, char* out, size_t len) {
  snprintf(out, len, "collcomm version %d.%d.%d%s", code / 10000, code / 100 % 100, code % 100, CC_SUFFIX);
}

/* A tool's --version: its name, then the version of the libcollcomm it runs with (ccGetVersion,
 * which may be newer than the headers the tool was built with). Returns 0, main's status. */
static inline int ccPrintToolVersion(const char* tool) {
  int code = 0;
  char text[96];
  if (ccGetVersion(&code) != ccSuccess) code = CC_VERSION_CODE;
  ccVersionText(code, text, sizeof(text));
  printf("%s (%s)\n", tool, text);
  return 0;
}

#endif /* COLLCOMM_VERSION_TEXT_H_ */
