#!/usr/bin/env python3
"""Within one host: the host model's AllReduce choice against the tuner's measured thresholds.

  python3 perf/calibrate/host_model_choices.py [TIMES_TSV [STEPS_TSV]]

Reads kHostConstants from src/plan/host_model.cc and mirrors hostEstimateCollUs (Ring, OneShot and
Direct, Simple and LL; the steps a slice takes from host_steps.py, with the step payloads of
STEPS_TSV, host_model.sh's steps.tsv beside TIMES_TSV; without one, no step term) and
planCollective's thresholds within a host (LL to 16 B, one-shot while a rank receives at most 64
KiB, Direct between threads from 4 MiB). For 2 and 4 ranks, threads and processes, it prints each
size where the two choose differently. Given host_model.sh's times.tsv (two ranks, forced choices)
it also prints, per measured size, each choice's time over the fastest forced one's (Direct left out
between processes, where the tuner never plans it), and the worst of the model's and the tuner's.
"""
import collections
import os
import re
import sys

from host_steps import further_steps, read_steps

HERE = os.path.dirname(os.path.abspath(__file__))
SPLIT = 16 << 20  # kHostModelCacheSplitBytes
ROW = re.compile(r"\{([0-9.]+), \{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}, \{\{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}\}, "
                 r"\{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}\},\s*// (\w+)")
# Without a steps.tsv the step payloads are unknown: no step term (as hostEstimateCollUs with 0).
NO_STEPS = (0, 0)


def constants():
    k = {}
    for r in ROW.findall(open(os.path.join(HERE, "../../src/plan/host_model.cc")).read()):
        v = list(map(float, r[:15]))
        k[r[15]] = dict(op=v[0], hop=(v[1], v[2]), step=(v[3], v[4]), ring=((v[5], v[6]), (v[7], v[8])),
                        one=(v[9], v[10]), direct=(v[11], v[12]))
    return k


def rate(r, b):
    return r[0] if b < SPLIT else r[1]


def model_us(k, choice, b, n):
    algo, proto = choice.split("/")
    p = 1 if proto == "LL" else 0
    steps = further_steps(algo, b, n, k["steps"][p]) * k["step"][p]
    if algo == "OneShot":
        if n == 2:
            return k["op"] + k["hop"][p] + steps + b / rate(k["one"], b)
        return k["op"] + k["hop"][0] + (n - 1) * b / rate(k["ring"][0], b) + n * b / rate(k["one"], b)
    rank_bytes = 2 * (n - 1) / n * b
    if algo == "Direct":
        return k["op"] + 3 * k["hop"][0] + rank_bytes / (rate(k["direct"], b) or rate(k["ring"][0], b))
    return k["op"] + 2 * (n - 1) * k["hop"][p] + steps + rank_bytes / rate(k["ring"][p], b)


CHOICES = ["Ring/Simple", "Ring/LL", "OneShot/Simple", "OneShot/LL", "Direct/Simple"]


def model_choice(k, b, n):
    return min(CHOICES, key=lambda c: model_us(k, c, b, n))  # ties: the first


def tuner_choice(cls, b, n):
    if cls == "threads" and b >= (4 << 20):
        return "Direct/Simple"
    algo = "OneShot" if b * (n - 1) <= (64 << 10) else "Ring"
    return f"{algo}/{'LL' if b <= 16 else 'Simple'}"


def main():
    k = constants()
    steps_path = sys.argv[2] if len(sys.argv) > 2 else (
        os.path.join(os.path.dirname(sys.argv[1]), "steps.tsv") if len(sys.argv) > 1 else None)
    class_steps = read_steps(steps_path) if steps_path and os.path.exists(steps_path) else {}
    for cls in k:
        k[cls]["steps"] = class_steps.get(cls, NO_STEPS)
    for cls in ("threads", "processes"):
        for n in (2, 4):
            print(f"{cls}, {n} ranks: sizes where the model and the tuner differ")
            b = 8
            while b <= (64 << 20):
                m, t = model_choice(k[cls], b, n), tuner_choice(cls, b, n)
                if m != t:
                    print(f"  {b:>9} B  model {m:<14} {model_us(k[cls], m, b, n):9.2f} us   "
                          f"tuner {t:<14} {model_us(k[cls], t, b, n):9.2f} us (modelled)")
                b *= 2
    if len(sys.argv) < 2:
        return
    series = {"Ring/Simple": "ring_simple", "Ring/LL": "ring_ll", "OneShot/Simple": "oneshot", "Direct/Simple": "direct"}
    best = collections.defaultdict(lambda: float("inf"))
    for line in open(sys.argv[1]):
        c, s, x, t = line.split()
        best[(c, s, int(x))] = min(best[(c, s, int(x))], float(t))
    worst = collections.defaultdict(lambda: (0.0, 0))
    for cls in ("threads", "processes"):
        print(f"\n{cls}, 2 ranks, measured: choice (its time / the fastest forced one's)")
        for b in sorted({x for c, _, x in best if c == cls}):
            meas = {c: best[(cls, s, b)] for c, s in series.items() if best[(cls, s, b)] < float("inf")}
            if cls == "processes":
                meas.pop("Direct/Simple", None)
            fastest = min(meas, key=meas.get)

            def ratio(c):
                return f"{meas[c] / meas[fastest]:.2f}" if c in meas else "not measured"

            m, t = model_choice(k[cls], b, 2), tuner_choice(cls, b, 2)
            print(f"  {b:>9} B  fastest {fastest:<14} {meas[fastest]:9.2f} us   model {m:<14} ({ratio(m)})   "
                  f"tuner {t:<14} ({ratio(t)})")
            for who, c in (("model", m), ("tuner", t)):
                if c in meas:
                    worst[(cls, who)] = max(worst[(cls, who)], (meas[c] / meas[fastest], b))
        for who in ("model", "tuner"):
            r, at = worst[(cls, who)]
            print(f"  worst {who}: {r:.2f}x the fastest forced choice, at {at} B")


if __name__ == "__main__":
    main()
