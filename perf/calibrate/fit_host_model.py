#!/usr/bin/env python3
"""Fit the host cost model's constants (src/plan/host_model.cc) to host_model.sh's times.

Input: a TSV of class, series, bytes, time (us), several repetitions per point; the fastest counts.
Each series is fitted as time = a + b * bytes, NCCL's latency + bandwidth shape: a is the median time
of the messages of at most 512 bytes, b the median per-byte time above a from 256 KiB up.
The sizes between (a few steps each, where per-step costs neither term holds dominate) are where the
model errs most; the table printed shows by how much. The model's constants follow from the
two-rank shapes host_model.cc gives:
  sendrecv       a = op + hop(Simple)        b = 1 / point-to-point throughput
  ring_simple    a = op + 2 hop(Simple)      b = 1 / throughput(Simple)   (2(n-1)/n = 1 at n = 2)
  ring_ll        a = op + 2 hop(LL)          b = 1 / throughput(LL)
  oneshot        a = op + hop(Simple)        b = 1 / one-shot throughput
  direct         a = op + 3 hop(Simple)      b = 1 / Direct throughput
Prints the C++ rows and, for every point, the model's time against the measured one.
"""
import collections
import sys

ORDER = ["threads", "processes", "net"]


SMALL = 512  # bytes: latency-bound
LARGE = 256 << 10  # bytes: bandwidth-bound


def fit(points):
    """a: the median time of small messages; b: slope through the origin of (t - a) over large ones."""
    small = sorted(t for x, t in points if x <= SMALL) or [min(t for _, t in points)]
    a = small[len(small) // 2]
    large = [(x, t - a) for x, t in points if x >= LARGE]
    if not large:  # a series measured on small messages only (LL): its largest points
        large = [(x, t - a) for x, t in sorted(points)[-2:] if x > SMALL]
    # The median of the per-byte times: messages that fit in cache and ones that do not differ by
    # 2-3x per byte here, and one rate for both should err alike either way.
    slopes = sorted(y / x for x, y in large if x > 0)
    b = slopes[len(slopes) // 2] if slopes else 1e-9
    return a, max(b, 1e-9)


def main():
    best = collections.defaultdict(dict)
    for line in open(sys.argv[1]):
        cls, series, size, t = line.split()
        key = (cls, series)
        x, t = int(size), float(t)
        if t <= 0:
            continue
        best[key][x] = min(t, best[key].get(x, float("inf")))
    rows = {}
    for cls in ORDER:
        f = {s: fit(sorted(best[(cls, s)].items())) for s in ["sendrecv", "ring_simple", "ring_ll", "oneshot", "direct"]
             if best[(cls, s)]}
        if "sendrecv" not in f or "ring_simple" not in f:
            continue
        hop_s = max(f["ring_simple"][0] - f["sendrecv"][0], 0.05)
        op = max(f["sendrecv"][0] - hop_s, 0.05)
        hop_ll = max((f["ring_ll"][0] - op) / 2, 0.05) if "ring_ll" in f else hop_s
        bw_s = 1 / f["ring_simple"][1]
        bw_ll = 1 / f["ring_ll"][1] if "ring_ll" in f else bw_s
        one = 1 / f["oneshot"][1] if "oneshot" in f else bw_s
        direct = 1 / f["direct"][1] if "direct" in f else 0.0
        p2p = 1 / f["sendrecv"][1]
        rows[cls] = dict(op=op, hop=(hop_s, hop_ll), bw=(bw_s, bw_ll), one=one, direct=direct, p2p=p2p)

    print("// opUs  hopUs{Simple, LL}  bytesPerUs{Simple, LL}  oneShot  direct  p2p")
    for cls in ORDER:
        if cls not in rows:
            continue
        r = rows[cls]
        print(f"    {{{r['op']:.2f}, {{{r['hop'][0]:.2f}, {r['hop'][1]:.2f}}}, {{{r['bw'][0]:.0f}, {r['bw'][1]:.0f}}}, "
              f"{r['one']:.0f}, {r['direct']:.0f}, {r['p2p']:.0f}}},  // {cls}")

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

    print("\n| class | series | bytes | measured (us) | model (us) | error |")
    print("|---|---|---|---|---|---|")
    worst = collections.defaultdict(float)
    for (cls, series), pts in sorted(best.items(), key=lambda kv: (ORDER.index(kv[0][0]), kv[0][1])):
        if cls not in rows:
            continue
        for x, t in sorted(pts.items()):
            m = model(rows[cls], series, x)
            err = (m - t) / t
            worst[cls] = max(worst[cls], abs(err))
            print(f"| {cls} | {series} | {x} | {t:.2f} | {m:.2f} | {err:+.0%} |")
    print()
    for cls in ORDER:
        if cls in worst:
            print(f"worst error, {cls}: {worst[cls]:.0%}")


if __name__ == "__main__":
    main()
