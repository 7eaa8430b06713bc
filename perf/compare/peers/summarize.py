#!/usr/bin/env python3
"""The peer baselines' summary: the median (and best) over repetitions of every raw output.

Usage: summarize.py [--medians FILE] RAW_FILE...   (markdown on stdout)

Raw files are named <config>.<rep>.txt and hold what the peer programs print: collective rows
(op size_B count iters time_us algbw busbw check, after "# nranks: N" and a "# op" header),
mem_bw_probe rows (kernel size_B threads reps best_GBs median_GBs) and its "# cross-core" line,
wake_latency_probe rows (probe iters best_us median_us). --medians writes every collective cell,
one per line, as TSV.
"""
import argparse
import os
import re
import statistics
import sys

KEY_LATENCY = (8, 1024, 65536)
KEY_BANDWIDTH = (1 << 20, 16 << 20, 256 << 20)


def bus_factor(op, n):
    if op.startswith("allreduce"):
        return 2.0 * (n - 1) / n
    if op in ("allgather", "reducescatter"):
        return (n - 1) / n
    return 1.0


class Results:
    def __init__(self):
        self.coll = {}    # (config, op, size) -> [time_us per rep]; insertion order kept
        self.failed = set()
        self.nranks = {}  # config -> n
        self.mem = {}     # (kernel, size, threads) -> ([median per rep], [best per rep])
        self.handoff = {}  # config -> [median ns per rep]
        self.wake = {}    # probe -> [median us per rep]

    def read(self, path):
        config = re.sub(r"\.[0-9]+\.txt$", "", os.path.basename(path))
        kind = None
        with open(path, errors="replace") as f:
            for line in f:
                v = line.split()
                if not v:
                    continue
                if line.startswith("# nranks:"):
                    self.nranks[config] = int(v[2])
                elif line.startswith("# op "):
                    kind = "coll"
                elif line.startswith("# kernel "):
                    kind = "mem"
                elif line.startswith("# probe "):
                    kind = "wake"
                elif line.startswith("# cross-core"):
                    self.handoff.setdefault(config, []).append(float(v[-2]))
                elif line.startswith("#"):
                    continue
                elif kind == "coll" and len(v) >= 8:
                    key = (config, v[0], int(v[1]))
                    self.coll.setdefault(key, []).append(float(v[4]))
                    if v[7] != "ok":
                        self.failed.add(key)
                elif kind == "mem" and len(v) >= 6:
                    med, best = self.mem.setdefault((v[0], int(v[1]), int(v[2])), ([], []))
                    med.append(float(v[5]))
                    best.append(float(v[4]))
                elif kind == "wake" and len(v) >= 4:
                    self.wake.setdefault(v[0], []).append(float(v[3]))

    def busbw(self, key, t_us):
        return key[2] / (t_us * 1e-6) / 1e9 * bus_factor(key[1], self.nranks.get(key[0], 2))

    def coll_table(self, stat):
        out = ["| config | ranks | op | reps | lat 8 B | lat 1 KiB | lat 64 KiB | busbw 1 MiB | busbw 16 MiB | busbw 256 MiB |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        pairs = list(dict.fromkeys((c, o) for c, o, _ in self.coll))
        for config, op in pairs:
            sizes = [s for c, o, s in self.coll if (c, o) == (config, op)]
            reps = len(self.coll[(config, op, sizes[0])])
            cells = []
            for size in KEY_LATENCY + KEY_BANDWIDTH:
                key = (config, op, size)
                if key not in self.coll:
                    cells.append("-")
                    continue
                t = stat(self.coll[key])
                value = t if size in KEY_LATENCY else self.busbw(key, t)
                cells.append(f"{value:.2f}" + (" FAIL" if key in self.failed else ""))
            out.append(f"| {config} | {self.nranks.get(config, '-')} | {op} | {reps} | " + " | ".join(cells) + " |")
        return out

    def report(self):
        out = ["### Collectives: MEDIAN of repetitions (latency = time per op in us; busbw in GB/s, nccl-tests convention)",
               ""] + self.coll_table(statistics.median)
        out += ["", "### Collectives: BEST of repetitions (same columns; shows the noise floor)", ""]
        out += self.coll_table(min)
        if self.mem:
            out += ["", "### Memory bandwidth probe (GB/s, STREAM byte counting; median over runs of each run's median)",
                    "", "| kernel | buffer size | threads | median GB/s | best GB/s |", "|---|---|---|---|---|"]
            for (kernel, size, threads), (med, best) in self.mem.items():
                shown = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
                out.append(f"| {kernel} | {shown} | {threads} | {statistics.median(med):.1f} | {max(best):.1f} |")
        for config, ns in self.handoff.items():
            out += ["", f"Cross-core cache-line ping-pong one-way latency (median of runs' medians): "
                        f"{statistics.median(ns):.1f} ns"]
        if self.wake:
            out += ["", "### Wakeup / transport latency probe (one-way 8 B, cpu0<->cpu1, us; median over runs)", "",
                    "| probe | one-way us |", "|---|---|"]
            out += [f"| {p} | {statistics.median(v):.2f} |" for p, v in self.wake.items()]
        return out

    def medians_tsv(self):
        rows = ["config\tnranks\top\tsize_B\tn\ttime_us_median\ttime_us_min\ttime_us_max\tbusbw_GBs_from_median\tcheck"]
        for key, times in self.coll.items():
            t = statistics.median(times)
            rows.append(f"{key[0]}\t{self.nranks.get(key[0], '-')}\t{key[1]}\t{key[2]}\t{len(times)}\t{t:.2f}\t"
                        f"{min(times):.2f}\t{max(times):.2f}\t{self.busbw(key, t):.3f}\t"
                        + ("FAIL" if key in self.failed else "ok"))
        return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--medians", help="write every collective median here (TSV)")
    ap.add_argument("raw", nargs="*")
    args = ap.parse_args()
    results = Results()
    for path in args.raw:
        results.read(path)
    print("\n".join(results.report()))
    if args.medians:
        with open(args.medians, "w") as f:
            f.write("\n".join(results.medians_tsv()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
