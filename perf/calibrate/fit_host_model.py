#!/usr/bin/env python3
"""Fit the host cost model's constants (src/plan/host_model.cc) to host_model.sh's times.

Input: a TSV of class, series, bytes, time (us), several repetitions per point; the fastest counts.
Each series is fitted as time = a + bytes / rate, NCCL's latency + bandwidth shape, with two rates
split at the stream threshold (SPLIT, bytes; host_model.h kHostModelCacheSplitBytes): a is the
median time of the messages of at most 512 bytes; the in-cache rate is the one of least worst
relative error over the points from 256 KiB up to SPLIT, the out-of-cache rate the same from SPLIT
up (a series with no point there keeps its in-cache rate). The sizes between 512 B and 256 KiB (a few steps each, where
per-step costs neither term holds dominate) are where the model errs most; the table printed shows
by how much, and also the error of one rate for all sizes from 256 KiB up, the median of their
bytes per us (the model before its cache term).
The model's constants follow from the two-rank shapes host_model.cc gives:
  sendrecv       a = op + hop(Simple)        rate = point-to-point throughput
  ring_simple    a = op + 2 hop(Simple)      rate = throughput(Simple)   (2(n-1)/n = 1 at n = 2)
  ring_ll        a = op + 2 hop(LL)          rate = throughput(LL)
  oneshot        a = op + hop(Simple)        rate = one-shot throughput
  direct         a = op + 3 hop(Simple)      rate = Direct throughput
Prints the C++ rows and, for every point, the model's time against the measured one.
"""
import collections
import os
import sys

ORDER = ["threads", "processes", "net"]
SERIES = ["sendrecv", "ring_simple", "ring_ll", "oneshot", "direct"]

SMALL = 512  # bytes: latency-bound
LARGE = 256 << 10  # bytes: bandwidth-bound
# Where messages stop fitting in cache: the stream threshold of the machine the constants are for
# (TunerConfig::defaultStreamThreshold: half the last-level cache, at least 4 MiB). The C++
# constant kHostModelCacheSplitBytes must say the same.
SPLIT = int(os.environ.get("SPLIT", 16 << 20))


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def fit(points):
    """(a, in-cache rate, out-of-cache rate, single rate from 256 KiB up) of one series."""
    small = [t for x, t in points if x <= SMALL] or [min(t for _, t in points)]
    a = median(small)

    def median_rate(lo, hi):
        # Bytes per us above a: the median (how the model was fitted with one rate).
        r = [x / (t - a) for x, t in points if lo <= x < hi and t > a]
        return median(r) if r else None

    def minimax_rate(lo, hi):
        # The rate whose worst relative error over these points is least: it errs alike either way.
        pts = [(x, t) for x, t in points if lo <= x < hi and t > a]
        if not pts:
            return None
        rates = [x / (t - a) for x, t in pts]
        lo_r, hi_r = min(rates) / 2, max(rates) * 2
        candidates = [lo_r * (hi_r / lo_r) ** (k / 4000) for k in range(4001)]
        return min(candidates, key=lambda r: max(abs(a + x / r - t) / t for x, t in pts))

    single = median_rate(LARGE, float("inf"))
    if single is None:  # a series measured on small messages only (LL): its largest points
        largest = [p for p in sorted(points)[-2:] if p[0] > SMALL]
        single = median_rate(min(x for x, _ in largest), float("inf")) if largest else 1e9
    inside = minimax_rate(LARGE, SPLIT) or single
    outside = minimax_rate(SPLIT, float("inf")) or inside
    return a, inside, outside, single


def constants(f, which):
    """The model's constants from the series' fits; which: 1 (in cache), 2 (beyond), 3 (one rate)."""
    hop_s = max(f["ring_simple"][0] - f["sendrecv"][0], 0.05)
    op = max(f["sendrecv"][0] - hop_s, 0.05)
    hop_ll = max((f["ring_ll"][0] - op) / 2, 0.05) if "ring_ll" in f else hop_s

    def r(s, fallback):
        return f[s][which] if s in f else fallback

    bw_s = r("ring_simple", 0)
    return dict(op=op, hop=(hop_s, hop_ll), bw=(bw_s, r("ring_ll", bw_s)), one=r("oneshot", bw_s),
                direct=r("direct", 0.0), p2p=r("sendrecv", 0))


def model(r, series, x):
    if series == "sendrecv":
        return r["op"] + r["hop"][0] + x / r["p2p"]
    if series == "ring_simple":
        return r["op"] + 2 * r["hop"][0] + x / r["bw"][0]
    if series == "ring_ll":
        return r["op"] + 2 * r["hop"][1] + x / r["bw"][1]
    if series == "oneshot":
        return r["op"] + r["hop"][0] + x / r["one"]
    return r["op"] + 3 * r["hop"][0] + x / (r["direct"] or r["bw"][0])


def main():
    best = collections.defaultdict(dict)
    for line in open(sys.argv[1]):
        cls, series, size, t = line.split()
        x, t = int(size), float(t)
        if t <= 0:
            continue
        best[(cls, series)][x] = min(t, best[(cls, series)].get(x, float("inf")))
    rows = {}
    for cls in ORDER:
        f = {s: fit(sorted(best[(cls, s)].items())) for s in SERIES if best[(cls, s)]}
        if "sendrecv" not in f or "ring_simple" not in f:
            continue
        rows[cls] = [constants(f, which) for which in (1, 2, 3)]  # in cache, beyond, one rate

    print(f"// split at {SPLIT} bytes; each rate {{in cache, beyond}}")
    print("// opUs  hopUs{Simple, LL}  ring{Simple, LL}  oneShot  direct  p2p")
    for cls in ORDER:
        if cls not in rows:
            continue
        i, o, _ = rows[cls]

        def pair(key, idx=None):
            a, b = (i[key], o[key]) if idx is None else (i[key][idx], o[key][idx])
            return f"{{{a:.0f}, {b:.0f}}}"

        print(f"    {{{i['op']:.2f}, {{{i['hop'][0]:.2f}, {i['hop'][1]:.2f}}}, {{{pair('bw', 0)}, {pair('bw', 1)}}}, "
              f"{pair('one')}, {pair('direct')}, {pair('p2p')}}},  // {cls}")

    print("\n| class | series | bytes | measured (us) | model (us) | error | one rate (us) | error |")
    print("|---|---|---|---|---|---|---|---|")
    worst = collections.defaultdict(lambda: [0.0, 0.0])
    for (cls, series), pts in sorted(best.items(), key=lambda kv: (ORDER.index(kv[0][0]), kv[0][1])):
        if cls not in rows:
            continue
        i, o, one = rows[cls]
        for x, t in sorted(pts.items()):
            m = model(i if x < SPLIT else o, series, x)
            m1 = model(one, series, x)
            err, err1 = (m - t) / t, (m1 - t) / t
            if x >= LARGE:
                worst[cls] = [max(worst[cls][0], abs(err)), max(worst[cls][1], abs(err1))]
            print(f"| {cls} | {series} | {x} | {t:.2f} | {m:.2f} | {err:+.0%} | {m1:.2f} | {err1:+.0%} |")
    print()
    for cls in ORDER:
        if cls in worst:
            print(f"worst error from {LARGE} B up, {cls}: {worst[cls][0]:.0%} (one rate: {worst[cls][1]:.0%})")


if __name__ == "__main__":
    main()
