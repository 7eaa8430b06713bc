/*
 * Ranks as threads or as launched processes for the examples (see example_ranks.h).
 */
#include "example_ranks.h"

#include <collcomm_launch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "version_text.h" /* the --version line every collcomm tool prints */

#define MAX_THREADS 64
/* Seconds a launched rank waits for the job to form (rank 0's id included). */
#define LAUNCH_TIMEOUT 60

static pthread_mutex_t printLock = PTHREAD_MUTEX_INITIALIZER;
/* Under ccrun, which prefixes every line with "[rank] " itself, examplePrintf adds no prefix. */
static int launcherPrefixesLines = 0;

void examplePrintf(int rank, const char* fmt, ...) {
  char text[8192], out[16384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  /* Prefix every line; a text that does not end in a newline gets one. */
  size_t n = 0;
  const char* line = text;
  while (*line != '\0' && n + 64 < sizeof(out)) {
    const char* end = strchr(line, '\n');
    size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    if (len > sizeof(out) - n - 32) len = sizeof(out) - n - 32;
    if (launcherPrefixesLines)
      n += (size_t)snprintf(out + n, sizeof(out) - n, "%.*s\n", (int)len, line);
    else
      n += (size_t)snprintf(out + n, sizeof(out) - n, "rank %d: %.*s\n", rank, (int)len, line);
    line += len + (end != NULL);
  }
  pthread_mutex_lock(&printLock);
  fflush(stdout);
  for (size_t done = 0; done < n;) {
    ssize_t w = write(STDOUT_FILENO, out + done, n - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  pthread_mutex_unlock(&printLock);
}

typedef struct {
  ExampleRankFn fn;
  int rank, nranks;
  ccComm_t comm;
  int result;
} ThreadRank;

static void* threadMain(void* arg) {
  ThreadRank* t = (ThreadRank*)arg;
  t->result = t->fn(t->rank, t->nranks, t->comm);
  return NULL;
}

static int runThreads(int n, ExampleRankFn fn) {
  ccComm_t comms[MAX_THREADS];
  ThreadRank ranks[MAX_THREADS];
  pthread_t threads[MAX_THREADS];
  ccResult_t r = ccCommInitAll(comms, n, NULL);
  if (r != ccSuccess) {
    fprintf(stderr, "ccCommInitAll(%d) failed: %s: %s\n", n, ccGetErrorString(r), ccGetLastError(NULL));
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    ranks[i] = (ThreadRank){fn, i, n, comms[i], 1};
    pthread_create(&threads[i], NULL, threadMain, &ranks[i]);
  }
  int failed = 0;
  for (int i = 0; i < n; ++i) {
    pthread_join(threads[i], NULL);
    failed |= ranks[i].result != 0;
  }
  for (int i = 0; i < n; ++i) ccCommDestroy(comms[i]);
  return failed;
}

/* Returns this rank's failure; *anyFailed: whether any rank failed (agreed with an all-reduce). */
static int runLaunched(ExampleRankFn fn, int* anyFailed) {
  ccConfig_t config = CC_CONFIG_INITIALIZER;
  ccLaunchInfo info;
  ccComm_t comm;
  config.timeout = LAUNCH_TIMEOUT;
  if (ccLaunchCommInit(&comm, &config, &info) != ccSuccess) return 1; /* it printed why */
  int failed = fn(info.rank, info.size, comm) != 0;
  if (ccAllReduce(&failed, anyFailed, 1, ccInt32, ccMax, comm, NULL) != ccSuccess) *anyFailed = 1;
  return ccCommDestroy(comm) != ccSuccess || failed;
}

int exampleRun(int argc, char** argv, const char* name, int defaultThreads, int minRanks, ExampleRankFn fn) {
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--version") == 0) {
      return ccPrintToolVersion(name);
    } else {
      fprintf(stderr, "usage: %s [-t THREADS] [--version]   (or start it with ccrun -n N / mpirun -n N)\n", name);
      return 2;
    }
  }
  ccLaunchInfo info;
  if (ccLaunchDetect(&info) != ccSuccess) return 2; /* it printed why */
  if (info.launched && threads != 0) {
    fprintf(stderr, "%s: -t is for runs without a launcher (started by %s: one rank per process)\n", name,
            info.launcher);
    return 2;
  }
  launcherPrefixesLines = strcmp(info.launcher, "ccrun") == 0;
  const int nranks = info.launched ? info.size : (threads != 0 ? threads : defaultThreads);
  if (nranks < minRanks || (!info.launched && nranks > MAX_THREADS)) {
    fprintf(stderr, "%s: needs %d to %d ranks, not %d\n", name, minRanks, MAX_THREADS, nranks);
    return 2;
  }
  int anyFailed = 1;
  int failed = info.launched ? runLaunched(fn, &anyFailed) : (anyFailed = runThreads(nranks, fn));
  if (!info.launched || info.rank == 0)
    printf("%s on %d ranks (%s): %s\n", name, nranks, info.launched ? info.launcher : "threads",
           (failed || anyFailed) ? "FAILED" : "correct");
  return failed ? 1 : 0;
}
