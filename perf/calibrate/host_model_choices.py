#!/usr/bin/env python3
"""Within one host: the host model's AllReduce choice against the tuner's measured thresholds.

  python3 perf/calibrate/host_model_choices.py [--cc-plan PATH] [TIMES_TSV [STEPS_TSV]]

Both choices and their modelled times come from the library, through cc-plan --host (tools/cc_plan.cc;
--cc-plan PATH, else the newest build*/tools/cc-plan of this checkout): "tuner" is what the planner
runs (--choose planner: planCollective's thresholds, with this environment's COLLCOMM_* settings),
"model" the host model's argmin over every algorithm and protocol the planner runs when forced
(--choose model), each timed by hostEstimateCollUs. The ring's step payloads are those of
STEPS_TSV (host_model.sh's steps.tsv, beside TIMES_TSV by default), else the FIFO's defaults. For 2
and 4 ranks, threads and processes, it prints each size where the two choose differently. Given
host_model.sh's times.tsv (two ranks, forced choices) it also prints, per measured size, each
choice's time over the fastest forced one's (Direct left out between processes, where the tuner
never plans it), and the worst of the model's and the tuner's.
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys

from host_steps import read_steps

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
# The measured series of times.tsv, by the choice (algorithm/protocol) each one forced.
SERIES = {"Ring/Simple": "ring_simple", "Ring/LL": "ring_ll", "OneShot/Simple": "oneshot", "Direct/Simple": "direct"}
MAX_BYTES = 64 << 20


def find_cc_plan(given):
    if given:
        return given
    built = [p for p in glob.glob(os.path.join(REPO, "build*", "tools", "cc-plan")) if os.access(p, os.X_OK)]
    if not built:
        raise SystemExit("host_model_choices.py: no build*/tools/cc-plan in %s; build it or pass --cc-plan PATH"
                         % os.path.normpath(REPO))
    return max(built, key=os.path.getmtime)


class Planner:
    """cc-plan --host runs, one per (class, ranks, choice, sizes); rows as {bytes: (choice, us)}."""

    def __init__(self, cc_plan, class_steps):
        self.cc_plan = cc_plan
        self.class_steps = class_steps

    def rows(self, cls, n, choose, first, last):
        cmd = [self.cc_plan, "--host", "--ranks", str(n), "--choose", choose, "-b", str(first), "-e", str(last),
               "-f", "2", "--json"]
        if cls == "processes":
            cmd.append("--processes")
        if cls in self.class_steps:
            simple, ll = self.class_steps[cls]
            cmd += ["--simple-step", str(simple), "--ll-step", str(ll)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            raise SystemExit("host_model_choices.py: %s failed: %s" % (" ".join(cmd), run.stderr.strip()))
        rows = {}
        for line in run.stdout.splitlines()[1:]:
            r = json.loads(line)
            rows[r["size"]] = ("%s/%s" % (r["algo"], r["proto"]), r["time_us"])
        return rows

    def at(self, cls, n, choose, b):
        return self.rows(cls, n, choose, b, b)[b]


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--cc-plan", help="the cc-plan binary (default: the newest build*/tools/cc-plan)")
    ap.add_argument("times", nargs="?", help="host_model.sh's times.tsv")
    ap.add_argument("steps", nargs="?", help="host_model.sh's steps.tsv (default: beside times.tsv)")
    args = ap.parse_args()
    steps_path = args.steps or (os.path.join(os.path.dirname(args.times), "steps.tsv") if args.times else None)
    class_steps = read_steps(steps_path) if steps_path and os.path.exists(steps_path) else {}
    plan = Planner(find_cc_plan(args.cc_plan), class_steps)

    for cls in ("threads", "processes"):
        for n in (2, 4):
            print(f"{cls}, {n} ranks: sizes where the model and the tuner differ")
            model = plan.rows(cls, n, "model", 8, MAX_BYTES)
            tuner = plan.rows(cls, n, "planner", 8, MAX_BYTES)
            for b in sorted(model):
                (m, m_us), (t, t_us) = model[b], tuner[b]
                if m != t:
                    print(f"  {b:>9} B  model {m:<14} {m_us:9.2f} us   tuner {t:<14} {t_us:9.2f} us (modelled)")
    if not args.times:
        return
    best = collections.defaultdict(lambda: float("inf"))
    for line in open(args.times):
        c, s, x, t = line.split()
        best[(c, s, int(x))] = min(best[(c, s, int(x))], float(t))
    worst = collections.defaultdict(lambda: (0.0, 0))
    for cls in ("threads", "processes"):
        print(f"\n{cls}, 2 ranks, measured: choice (its time / the fastest forced one's)")
        for b in sorted({x for c, _, x in best if c == cls}):
            meas = {c: best[(cls, s, b)] for c, s in SERIES.items() if best[(cls, s, b)] < float("inf")}
            if cls == "processes":
                meas.pop("Direct/Simple", None)
            fastest = min(meas, key=meas.get)

            def ratio(c):
                return f"{meas[c] / meas[fastest]:.2f}" if c in meas else "not measured"

            m, t = plan.at(cls, 2, "model", b)[0], plan.at(cls, 2, "planner", b)[0]
            print(f"  {b:>9} B  fastest {fastest:<14} {meas[fastest]:9.2f} us   model {m:<14} ({ratio(m)})   "
                  f"tuner {t:<14} ({ratio(t)})")
            for who, c in (("model", m), ("tuner", t)):
                if c in meas:
                    worst[(cls, who)] = max(worst[(cls, who)], (meas[c] / meas[fastest], b))
        for who in ("model", "tuner"):
            r, at = worst[(cls, who)]
            print(f"  worst {who}: {r:.2f}x the fastest forced choice, at {at} B")


if __name__ == "__main__":
    sys.exit(main())
