#!/usr/bin/env python3
"""Within one host: the host model's AllReduce choice against the tuner's measured thresholds.

  python3 perf/calibrate/host_model_choices.py [TIMES_TSV]

Reads kHostConstants from src/plan/host_model.cc and mirrors hostEstimateCollUs (Ring, OneShot and
Direct, Simple and LL) and planCollective's thresholds within a host (LL to 16 B, one-shot while a
rank receives at most 64 KiB, Direct between threads from 4 MiB). For 2 and 4 ranks, threads and
processes, it prints each size where the two choose differently. Given host_model.sh's times.tsv
(two ranks, forced choices) it also prints, per measured size, each choice's time over the fastest
forced one's (Direct left out between processes, where the tuner never plans it).
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SPLIT = 16 << 20  # kHostModelCacheSplitBytes
ROW = re.compile(r"\{([0-9.]+), \{([0-9.]+), ([0-9.]+)\}, \{\{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}\}, "
                 r"\{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}, \{([0-9.]+), ([0-9.]+)\}\},\s*// (\w+)")


def constants():
    k = {}
    for r in ROW.findall(open(os.path.join(HERE, "../../src/plan/host_model.cc")).read()):
        v = list(map(float, r[:13]))
        k[r[13]] = dict(op=v[0], hop=(v[1], v[2]), ring=((v[3], v[4]), (v[5], v[6])), one=(v[7], v[8]),
                        direct=(v[9], v[10]))
    return k


def rate(r, b):
    return r[0] if b < SPLIT else r[1]


def model_us(k, choice, b, n):
    algo, proto = choice.split("/")
    p = 1 if proto == "LL" else 0
    if algo == "OneShot":
        if n == 2:
            return k["op"] + k["hop"][p] + b / rate(k["one"], b)
        return k["op"] + k["hop"][0] + (n - 1) * b / rate(k["ring"][0], b) + n * b / rate(k["one"], b)
    rank_bytes = 2 * (n - 1) / n * b
    if algo == "Direct":
        return k["op"] + 3 * k["hop"][0] + rank_bytes / (rate(k["direct"], b) or rate(k["ring"][0], b))
    return k["op"] + 2 * (n - 1) * k["hop"][p] + rank_bytes / rate(k["ring"][p], b)


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


if __name__ == "__main__":
    main()
