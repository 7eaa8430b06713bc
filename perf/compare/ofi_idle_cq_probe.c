// ofi_idle_cq_probe.c - what an idle proxy round costs over libfabric's tcp;ofi_rxm, by how the
// comms' endpoints and completion queues are laid out (docs/net.md, "The OFI backend"). K pairs of
// endpoints in one process, each pair connected by one message each way, then every queue read
// once per round while nothing moves:
//   sep     each endpoint its own domain, AV and CQ (the OFI backend: one endpoint per comm)
//   shared  one domain, AV and CQ, every endpoint bound to it (one queue per process and device)
//   one     a single pair of endpoints (one endpoint per process and device)
//
//   gcc -O2 -o /tmp/ofi_idle_cq_probe perf/compare/ofi_idle_cq_probe.c -lfabric
//   /tmp/ofi_idle_cq_probe sep 8 200000     # mode, K, rounds
//   strace -f -c /tmp/ofi_idle_cq_probe shared 8 10000   # the poll()s per round
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                  \
  do {                                                            \
    int rc_ = (int)(x);                                           \
    if (rc_) {                                                    \
      fprintf(stderr, "%s: %d %s\n", #x, rc_, fi_strerror(-rc_)); \
      exit(1);                                                    \
    }                                                             \
  } while (0)
static struct fi_info* info;
static struct fid_fabric* fab;
typedef struct {
  struct fid_domain* dom;
  struct fid_av* av;
  struct fid_cq* cq;
} Dom;
static void open_dom(Dom* d) {
  CHECK(fi_domain(fab, info, &d->dom, NULL));
  struct fi_av_attr av = {.type = FI_AV_TABLE};
  CHECK(fi_av_open(d->dom, &av, &d->av, NULL));
  struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_TAGGED, .size = 256, .wait_obj = FI_WAIT_NONE};
  CHECK(fi_cq_open(d->dom, &cq, &d->cq, NULL));
}
static struct fid_ep* open_ep(Dom* d) {
  struct fid_ep* ep;
  CHECK(fi_endpoint(d->dom, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &d->av->fid, 0));
  CHECK(fi_ep_bind(ep, &d->cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));
  return ep;
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static int drain(struct fid_cq* cq) {
  struct fi_cq_tagged_entry e[16];
  ssize_t n = fi_cq_read(cq, e, 16);
  if (n == -FI_EAVAIL) {
    struct fi_cq_err_entry err = {0};
    fi_cq_readerr(cq, &err, 0);
    fprintf(stderr, "cq err %d\n", err.err);
    exit(1);
  }
  return n > 0 ? (int)n : 0;
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "sep";
  int K = argc > 2 ? atoi(argv[2]) : 8;
  long rounds = argc > 3 ? atol(argv[3]) : 200000;
  struct fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_MSG;
  hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &info));
  CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
  int shared = strcmp(mode, "shared") == 0, one = strcmp(mode, "one") == 0;
  int neps = one ? 2 : 2 * K;
  Dom* doms = calloc(neps, sizeof(Dom));
  struct fid_ep** eps = calloc(neps, sizeof(*eps));
  fi_addr_t* peer = calloc(neps, sizeof(fi_addr_t));
  if (shared) open_dom(&doms[0]);
  for (int i = 0; i < neps; ++i) {
    Dom* d = shared ? &doms[0] : &doms[i];
    if (!shared) open_dom(d);
    eps[i] = open_ep(d);
  }
  for (int i = 0; i < neps; ++i) {  // pairs (0,1), (2,3), ...
    Dom* d = shared ? &doms[0] : &doms[i];
    char name[128];
    size_t len = sizeof(name);
    CHECK(fi_getname(&eps[i ^ 1]->fid, name, &len));
    if (fi_av_insert(d->av, name, 1, &peer[i], 0, NULL) != 1) {
      fprintf(stderr, "av\n");
      exit(1);
    }
  }
  // One message each way per pair, so that every rxm connection is up.
  if (neps > 64) {
    fprintf(stderr, "K is at most 32\n");
    return 1;
  }
  static char buf[64][8], rbuf[64][8];
  struct fi_context2 ctx[128];
  int want = 0, got = 0;
  for (int i = 0; i < neps; ++i) {
    CHECK(fi_trecv(eps[i], rbuf[i], 8, NULL, FI_ADDR_UNSPEC, 7, 0, &ctx[2 * i]));
  }
  for (int i = 0; i < neps; ++i) {
    for (;;) {
      ssize_t rc = fi_tsend(eps[i], buf[i], 8, NULL, peer[i], 7, &ctx[2 * i + 1]);
      if (rc == 0) break;
      if (rc != -FI_EAGAIN) CHECK(rc);
      for (int j = 0; j < (shared ? 1 : neps); ++j) got += drain(doms[j].cq);
    }
  }
  want = 2 * neps;
  double t0 = now();
  while (got < want && now() - t0 < 5e9)
    for (int j = 0; j < (shared ? 1 : neps); ++j) got += drain(doms[j].cq);
  if (got < want) {
    fprintf(stderr, "only %d of %d completions\n", got, want);
    return 1;
  }
  int nq = shared ? 1 : neps;
  // Warm, then time idle rounds: each round reads every queue once.
  for (long r = 0; r < 1000; ++r)
    for (int j = 0; j < nq; ++j) drain(doms[j].cq);
  double t = now();
  for (long r = 0; r < rounds; ++r)
    for (int j = 0; j < nq; ++j) drain(doms[j].cq);
  t = now() - t;
  printf("mode=%s endpoints=%d queues=%d: %.0f ns per round (%.0f ns per queue read)\n", mode, neps, nq, t / rounds,
         t / rounds / nq);
  return 0;
}
