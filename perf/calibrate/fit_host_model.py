#!/usr/bin/env python3
"""Fit the host cost model's constants (src/plan/host_model.cc) to host_model.sh's times.

  python3 fit_host_model.py TIMES_TSV [STEPS_TSV]   (STEPS_TSV: steps.tsv beside TIMES_TSV)

Input: a TSV of class, series, bytes, time (us), several repetitions per point; the fastest counts;
and each class's ring step payloads (steps.tsv). Each series is fitted as
time = a + further steps x step cost + bytes / rate, NCCL's latency + bandwidth shape with the FIFO
steps a slice takes beyond the one its hand-off carries (host_steps.py, hostFurtherSteps), and two
rates split at the stream threshold (SPLIT, bytes; host_model.h kHostModelCacheSplitBytes): a is the
median time of the messages of at most 512 bytes; given a step cost, the in-cache rate is the one
of least worst relative error over the points from 256 KiB up to SPLIT, the out-of-cache rate the
same from SPLIT up (a series with no point there keeps its in-cache rate); the step cost is the
least whose two rates leave a worst relative error within a point (STEP_TOLERANCE) of the least,
over the points from 256 KiB up and those with further steps. The ring series give each protocol's step cost; one-shot takes Simple's. The table
printed shows each point's error, and beside it the model without the step term fitted the same
way (the model before).
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

from host_steps import further_steps, read_steps

ORDER = ["threads", "processes", "net"]
SERIES = ["sendrecv", "ring_simple", "ring_ll", "oneshot", "direct"]

SMALL = 512  # bytes: latency-bound
LARGE = 256 << 10  # bytes: bandwidth-bound
# Where messages stop fitting in cache: the stream threshold of the machine the constants are for
# (TunerConfig::defaultStreamThreshold: half the last-level cache, at least 4 MiB). The C++
# constant kHostModelCacheSplitBytes must say the same.
SPLIT = int(os.environ.get("SPLIT", 16 << 20))
STEP_TOLERANCE = 0.01  # a step cost must lower the worst relative error by more than this


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def fit(points, extra=None, step_fixed=None):
    """(a, step cost, in-cache rate, out-of-cache rate) of one series; extra(x): its further steps."""
    small = [t for x, t in points if x <= SMALL] or [min(t for _, t in points)]
    a = median(small)
    extra = extra or (lambda x: 0.0)

    def minimax_rate(s, lo, hi, n=4000):
        # The rate whose worst relative error over these points is least: it errs alike either way.
        pts = [(x, t) for x, t in points if lo <= x < hi]
        rates = [x / (t - a - s * extra(x)) for x, t in pts if t - a - s * extra(x) > 0]
        if not rates:
            return None
        lo_r, hi_r = min(rates) / 2, max(rates) * 2
        candidates = [lo_r * (hi_r / lo_r) ** (k / n) for k in range(n + 1)]
        return min(candidates, key=lambda r: max(abs(a + s * extra(x) + x / r - t) / t for x, t in pts))

    def rates(s, n=4000):
        inside = minimax_rate(s, LARGE, SPLIT, n)
        if inside is None:  # a series measured on small messages only (LL): from its larger ones
            inside = minimax_rate(s, SMALL + 1, SPLIT, n) or 1e9
        return inside, minimax_rate(s, SPLIT, float("inf"), n) or inside

    def worst(s, inside, outside):
        pts = [(x, t) for x, t in points if x >= LARGE or extra(x) > 0]
        return max((abs(a + s * extra(x) + x / (inside if x < SPLIT else outside) - t) / t for x, t in pts),
                   default=0.0)

    if step_fixed is not None:
        s = step_fixed
    elif any(extra(x) > 0 for x, _ in points):
        # The least step cost within a point of the least worst error: where the steps grow with the
        # bytes the rate can stand in for them, and a cost the points do not ask for is not taken.
        errs = {k * 0.02: worst(k * 0.02, *rates(k * 0.02, 400)) for k in range(501)}
        s = min(s for s, e in errs.items() if e <= min(errs.values()) + STEP_TOLERANCE)
    else:
        s = 0.0
    return (a, s) + rates(s)


def constants(f, which):
    """The model's constants from the series' fits; which: 2 (in cache), 3 (beyond)."""
    hop_s = max(f["ring_simple"][0] - f["sendrecv"][0], 0.05)
    op = max(f["sendrecv"][0] - hop_s, 0.05)
    hop_ll = max((f["ring_ll"][0] - op) / 2, 0.05) if "ring_ll" in f else hop_s

    def r(s, fallback):
        return f[s][which] if s in f else fallback

    bw_s = r("ring_simple", 0)
    step = (f["ring_simple"][1], f["ring_ll"][1] if "ring_ll" in f else f["ring_simple"][1])
    return dict(op=op, hop=(hop_s, hop_ll), step=step, bw=(bw_s, r("ring_ll", bw_s)), one=r("oneshot", bw_s),
                direct=r("direct", 0.0), p2p=r("sendrecv", 0))


def extra_of(series, steps):
    """The series' further steps at x bytes (two ranks), from its class's (Simple, LL) step payloads."""
    if series == "ring_simple":
        return lambda x: further_steps("Ring", x, 2, steps[0])
    if series == "ring_ll":
        return lambda x: further_steps("Ring", x, 2, steps[1])
    if series == "oneshot":
        return lambda x: further_steps("OneShot", x, 2, steps[0])
    return None


def model(r, series, x, steps):
    e = (extra_of(series, steps) or (lambda x: 0.0))(x)
    if series == "sendrecv":
        return r["op"] + r["hop"][0] + x / r["p2p"]
    if series == "ring_simple":
        return r["op"] + 2 * r["hop"][0] + e * r["step"][0] + x / r["bw"][0]
    if series == "ring_ll":
        return r["op"] + 2 * r["hop"][1] + e * r["step"][1] + x / r["bw"][1]
    if series == "oneshot":
        return r["op"] + r["hop"][0] + e * r["step"][0] + x / r["one"]
    return r["op"] + 3 * r["hop"][0] + x / (r["direct"] or r["bw"][0])


def main():
    best = collections.defaultdict(dict)
    for line in open(sys.argv[1]):
        cls, series, size, t = line.split()
        x, t = int(size), float(t)
        if t <= 0:
            continue
        best[(cls, series)][x] = min(t, best[(cls, series)].get(x, float("inf")))
    steps_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(sys.argv[1]), "steps.tsv")
    class_steps = read_steps(steps_path)
    rows, before = {}, {}
    for cls in ORDER:
        if cls not in class_steps:
            continue
        steps = class_steps[cls]
        pts = {s: sorted(best[(cls, s)].items()) for s in SERIES if best[(cls, s)]}
        if "sendrecv" not in pts or "ring_simple" not in pts:
            continue
        f = {s: fit(p, extra_of(s, steps)) for s, p in pts.items() if s != "oneshot"}
        if "oneshot" in pts:
            f["oneshot"] = fit(pts["oneshot"], extra_of("oneshot", steps), f["ring_simple"][1])
        g = {s: fit(p) for s, p in pts.items()}  # no step term: the model before
        rows[cls] = [constants(f, which) for which in (2, 3)] + [steps]  # in cache, beyond
        before[cls] = [constants(g, which) for which in (2, 3)]

    print(f"// split at {SPLIT} bytes; each rate {{in cache, beyond}}")
    print("// opUs  hopUs{Simple, LL}  stepUs{Simple, LL}  bytesPerUs{Simple, LL}  oneShot  direct  p2p")
    for cls in ORDER:
        if cls not in rows:
            continue
        i, o, _ = rows[cls]

        def pair(key, idx=None):
            a, b = (i[key], o[key]) if idx is None else (i[key][idx], o[key][idx])
            return f"{{{a:.0f}, {b:.0f}}}"

        print(f"    {{{i['op']:.2f}, {{{i['hop'][0]:.2f}, {i['hop'][1]:.2f}}}, {{{i['step'][0]:.2f}, {i['step'][1]:.2f}}}, "
              f"{{{pair('bw', 0)}, {pair('bw', 1)}}}, "
              f"{pair('one')}, {pair('direct')}, {pair('p2p')}}},  // {cls}")

    print("\n| class | series | bytes | measured (us) | model (us) | error | no step term (us) | error |")
    print("|---|---|---|---|---|---|---|---|")
    worst = collections.defaultdict(lambda: [0.0, 0.0])
    for (cls, series), pts in sorted(best.items(), key=lambda kv: (ORDER.index(kv[0][0]), kv[0][1])):
        if cls not in rows:
            continue
        i, o, steps = rows[cls]
        bi, bo = before[cls]
        for x, t in sorted(pts.items()):
            m = model(i if x < SPLIT else o, series, x, steps)
            m1 = model(bi if x < SPLIT else bo, series, x, steps)
            err, err1 = (m - t) / t, (m1 - t) / t
            if x >= LARGE:
                worst[cls] = [max(worst[cls][0], abs(err)), max(worst[cls][1], abs(err1))]
            print(f"| {cls} | {series} | {x} | {t:.2f} | {m:.2f} | {err:+.0%} | {m1:.2f} | {err1:+.0%} |")
    print()
    for cls in ORDER:
        if cls in worst:
            print(f"worst error from {LARGE} B up, {cls}: {worst[cls][0]:.0%} (no step term: {worst[cls][1]:.0%})")


if __name__ == "__main__":
    main()
