#!/usr/bin/env python3
"""compare_report.py - the table of perf/compare/compare.sh (stdlib only).

Reads OUT_DIR/runs.tsv (one line per run: case, op, runner, rep, nranks, sizes, rc, log),
host.txt, commands.txt and notes.txt; parses every run's output and writes the markdown report
(the table, the ‡ cells phase by phase, issue 6's targets) to stdout and every median to
OUT_DIR/medians.tsv. Exit status 1 when any run failed.

Outputs parsed:
  collcomm (nccl-tests format, rank 0 only, "[0] " prefix from ccrun): rows
      size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong
    (out-of-place, then in-place). The compared column is out-of-place, except broadcast:
    in-place, because MPI_Bcast is in place while the MPI allreduce/allgather/reduce-scatter
    are out of place.
  peers (mpi_bench, gloo_bench, oneccl_bench): rows
      op size_B count/rank iters time_us algbw busbw check      (lines starting with # skipped)
  every log: "# phase_probe before|after NS" (compare.sh's phase_probe, the round trip of a cache
    line between the first two CPUs around the command); a run is far when either is > FAR_NS.
Time = mean time per operation of the slowest rank on both sides (collcomm -a 3).
busbw is recomputed from the median time: size / time * factor (nccl-tests factors).
"""
import argparse
import os
import statistics
import sys

OPS = {  # op -> (collcomm variant compared, peer row names, bus factor(n))
    "allreduce": ("oop", ("allreduce", "allreduce:ring"), lambda n: 2.0 * (n - 1) / n),
    "allgather": ("oop", ("allgather",), lambda n: (n - 1) / n),
    "reduce_scatter": ("oop", ("reducescatter",), lambda n: (n - 1) / n),
    "broadcast": ("ip", ("bcast",), lambda n: 1.0),
}
CASE_TITLE = {
    "shm": "shm, 2 proc pinned",
    "oversub": "4 ranks on 2 cores",
    "net": "NET, loopback TCP",
}
# table columns: (label, runner per case)
PEER_COLS = [
    ("Open MPI", {"shm": "ompi-vader", "oversub": "ompi-vader-np4", "net": "ompi-tcp"}),
    ("MPICH", {"shm": "mpich"}),
    ("Gloo", {"net": "gloo-tcp"}),
    ("oneCCL", {"shm": "oneccl"}),
]
# Peers that also get a ratio column of their own, beside the one against the best peer.
RATIO_COLS = ["oneCCL"]
# Issue 6's targets: (what, case, op, sizes (None: every size the run has), peer runners compared
# against (the best of them), the ratio collcomm must reach). The planner target has its own script.
TARGETS = [
    ("allreduce 8 B: latency ≤ Open MPI", "shm", "allreduce", [8], ("ompi-vader",), 1.0),
    ("allreduce 1 MiB: busbw ≥ 1.5× Open MPI", "shm", "allreduce", [1 << 20], ("ompi-vader",), 1.5),
    ("allreduce 16 MiB: busbw ≥ 2× Open MPI", "shm", "allreduce", [16 << 20], ("ompi-vader",), 2.0),
    ("allreduce 256 MiB: busbw ≥ 3× Open MPI", "shm", "allreduce", [256 << 20], ("ompi-vader",), 3.0),
    ("allgather, every size: ≥ the better of Open MPI and MPICH", "shm", "allgather", None,
     ("ompi-vader", "mpich"), 1.0),
    ("broadcast, every size: ≥ the better of Open MPI and MPICH", "shm", "broadcast", None,
     ("ompi-vader", "mpich"), 1.0),
    ("reduce_scatter, every size: ≥ the better of Open MPI and MPICH", "shm", "reduce_scatter", None,
     ("ompi-vader", "mpich"), 1.0),
    ("4 ranks on 2 cores, every size: ≥ Open MPI (yield mode)", "oversub", "allreduce", None,
     ("ompi-vader-np4",), 1.0),
    ("NET 8 B: latency ≤ Open MPI TCP", "net", "allreduce", [8], ("ompi-tcp",), 1.0),
    ("NET 16 MiB: busbw ≥ 2× Open MPI TCP", "net", "allreduce", [16 << 20], ("ompi-tcp",), 2.0),
]
LAT_LIMIT = 64 * 1024  # below: latency ratio (time); at or above: busbw ratio
NOISY = 2.0            # max/min of the repetitions above which a time is marked noisy
FAR_NS = 200.0         # phase probe round trip above which the two CPUs count as far apart


def expected_size(op, req, n):
    """Bytes the benchmarks actually move for a requested size (both sides round the same way)."""
    count = max(req // 4, 1)
    if op in ("allgather", "reduce_scatter"):
        count = max(count // n, 1) * n
    return count * 4


def size_label(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}"
    return f"{b} B"


def fmt_t(t):
    if t < 100:
        return f"{t:.2f}"
    if t < 10000:
        return f"{t:.1f}"
    return f"{t:.0f}"


def fmt_bw(bw):
    if bw < 0.01:
        return f"{bw:.1e}"
    return f"{bw:.3f}" if bw < 1 else f"{bw:.2f}"


def read_kv(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    out[k] = v
    return out


def parse_collcomm(path):
    """Rows of rank 0's table: {size: (oop_us, oop_wrong, ip_us, ip_wrong)}."""
    rows = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("[0] "):
                    line = line[4:]
                elif line.startswith("["):
                    continue  # another rank's line
                v = line.split()
                if len(v) < 13 or not v[0].isdigit():
                    continue
                try:
                    rows[int(v[0])] = (float(v[5]), v[8], float(v[9]), v[12])
                except ValueError:
                    continue
    except OSError:
        pass
    return rows


def parse_peer(path, names):
    """Rows of mpi_bench / gloo_bench / oneccl_bench: {size: (time_us, check)}."""
    rows = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                v = line.split()
                if len(v) < 8 or line.lstrip().startswith("#") or v[0] not in names:
                    continue
                try:
                    rows[int(v[1])] = (float(v[4]), v[7])
                except ValueError:
                    continue
    except OSError:
        pass
    return rows


def parse_probe(path):
    """The phase probe's round trips (ns) around one command, in the order logged."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                v = line.split()
                if len(v) == 4 and v[:2] == ["#", "phase_probe"]:
                    try:
                        out.append(float(v[3]))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


class Cell:
    """Samples of one (case, op, runner, size) over the repetitions."""

    def __init__(self):
        self.times = []      # compared variant, µs
        self.other = []      # collcomm's other variant, µs
        self.fails = []      # (log, reason)
        self.size = None     # bytes actually moved
        self.far = 0         # repetitions whose command started or ended with the CPUs far apart
        self.by_phase = {"near": [], "far": []}  # the times again, by the phase around the repetition

    def median(self):
        return statistics.median(self.times) if self.times else None

    def phase_median(self, phase):
        t = self.by_phase[phase]
        return statistics.median(t) if t else None


def speedup(case, op, req, n, cc_t, peer_t, cells):
    """Above 1: collcomm faster. Latency ratio below LAT_LIMIT, busbw ratio from there."""
    if req < LAT_LIMIT:
        return peer_t / cc_t
    return ((cells[(case, op, "collcomm", req)].size or req) / cc_t) / (expected_size(op, req, n) / peer_t)


def by_phase(case, op, req, n, cols, runners_seen, cells):
    """A table row comparing a cell's near repetitions and its far ones, side by side, when collcomm
    or a peer had far ones; else None. A phase where one side has no repetition shows as –."""
    cc = cells.get((case, op, "collcomm", req))
    peers = []
    for label, m in cols:
        r = m.get(case)
        c = cells.get((case, op, r, req)) if r in runners_seen else None
        if c is not None and not c.fails:
            peers.append((label, c))
    if cc is None or cc.fails or not peers or not (cc.far or any(c.far for _, c in peers)):
        return None
    row = [CASE_TITLE.get(case, case), op + (" (in-place)" if op == "broadcast" else ""), size_label(req)]
    for phase in ("near", "far"):
        mine = cc.phase_median(phase)
        theirs = [(c.phase_median(phase), label, len(c.by_phase[phase])) for label, c in peers if c.by_phase[phase]]
        if mine is None or not theirs:
            row += ["–", "–", "–"]
            continue
        best = min(theirs)
        ratio = speedup(case, op, req, n, mine, best[0], cells)
        row += [f"{fmt_t(mine)} ({len(cc.by_phase[phase])})", f"{fmt_t(best[0])} ({best[2]}, {best[1]})",
                f"{ratio:.2f}"]
    return "| " + " | ".join(row) + " |"


def target_rows(order, nranks, cells, probed):
    """The targets table: per target, its worst cell over the overall medians and over the near
    repetitions' medians (only when the run was probed), and whether the target holds there."""
    rows = []
    for what, case, op, sizes, runners, need in TARGETS:
        reqs = [r for c, o, r in order if c == case and o == op and (sizes is None or r in sizes)]
        worst = {"all": None, "near": None}  # (ratio, size)
        missing = False
        for req in reqs:
            cc = cells.get((case, op, "collcomm", req))
            peers = [cells.get((case, op, r, req)) for r in runners]
            peers = [c for c in peers if c is not None and not c.fails and c.times]
            if cc is None or cc.fails or not cc.times or not peers:
                missing = True
                continue
            n = nranks[case]
            medians = {"all": (cc.median(), min(c.median() for c in peers))}
            near = [c.phase_median("near") for c in peers if c.by_phase["near"]]
            if probed and cc.by_phase["near"] and near:
                medians["near"] = (cc.phase_median("near"), min(near))
            for key, (mine, theirs) in medians.items():
                ratio = speedup(case, op, req, n, mine, theirs, cells)
                if worst[key] is None or ratio < worst[key][0]:
                    worst[key] = (ratio, req)
        cols = [what]
        for key in ("all", "near"):
            if worst[key] is None:
                cols += ["–", "–"]
            else:
                ratio, req = worst[key]
                cols += [f"{ratio:.2f} ({size_label(req)})", "yes" if ratio >= need else "**no**"]
        if not reqs:
            cols[0] += " (not in this run)"
        elif missing:
            cols[0] += " (cells missing)"
        rows.append("| " + " | ".join(cols) + " |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    od = args.out_dir
    host = read_kv(os.path.join(od, "host.txt"))

    cells = {}       # (case, op, runner, size) -> Cell
    order = []       # (case, op, size) in first-seen order
    nranks = {}
    runners_seen = set()
    failed_runs = []
    probes = []      # every phase probe round trip, ns
    far_runs = 0
    with open(os.path.join(od, "runs.tsv")) as f:
        next(f)
        for line in f:
            case, op, runner, rep, n, sizes, rc, log = line.rstrip("\n").split("\t")
            n, rc = int(n), int(rc)
            nranks[case] = n
            runners_seen.add(runner)
            rel = os.path.relpath(log, od)
            variant, names, _ = OPS[op]
            if rc != 0:
                failed_runs.append((case, op, runner, rep, rc, rel))
            rows = parse_collcomm(log) if runner == "collcomm" else parse_peer(log, names)
            probe = parse_probe(log)
            probes += probe
            far = any(p > FAR_NS for p in probe)
            far_runs += far
            for s in sizes.split(","):
                req = int(s)
                if (case, op, req) not in order:
                    order.append((case, op, req))
                c = cells.setdefault((case, op, runner, req), Cell())
                exp = expected_size(op, req, n)
                if runner == "collcomm":
                    row = rows.get(exp) or (next(iter(rows.values())) if len(rows) == 1 else None)
                    got = exp if exp in rows else (next(iter(rows)) if len(rows) == 1 else None)
                else:
                    row = rows.get(exp)
                    got = exp
                if rc != 0:
                    c.fails.append((rel, f"exit status {rc}" + ("" if row else ", no result row")))
                    continue
                if row is None:
                    c.fails.append((rel, "no result row"))
                    continue
                if runner == "collcomm":
                    oop, oopw, ip, ipw = row
                    if oopw not in ("0", "N/A") or ipw not in ("0", "N/A"):
                        c.fails.append((rel, f"#wrong {oopw}/{ipw}"))
                        continue
                    t, other = (oop, ip) if variant == "oop" else (ip, oop)
                    c.other.append(other)
                else:
                    t, check = row
                    if check != "ok":
                        c.fails.append((rel, f"check {check}"))
                        continue
                c.times.append(t)
                c.by_phase["far" if far else "near"].append(t)
                c.size = got
                c.far += far
    any_fail = bool(failed_runs) or any(c.fails for c in cells.values())

    # ---------------------------------------------------------------- header
    out = []
    w = out.append
    w(f"# collcomm vs Open MPI, MPICH, Gloo, oneCCL: {host.get('date', '?')}, host {host.get('cpu', '?')} "
      f"({host.get('ncpu', '?')} CPUs, {host.get('mem_gib', '?')} GiB, kernel {host.get('kernel', '?')}), "
      f"median of {host.get('reps', '?')} repetition(s), run took {host.get('elapsed_s', '?')} s")
    w("")
    w(f"collcomm {host.get('collcomm', '?')}; peers: {host.get('libs', '?')}")
    w(f"Load average (1/5/15 min) at start {host.get('load_start', '?')}, at end {host.get('load_end', '?')}. "
      f"Timed loop per size: ~{host.get('target_s', '?')} s (collcomm: per variant).")
    w("")
    w("Commands (S: size in bytes; one collcomm invocation per size, one peer invocation per op for all sizes):")
    w("")
    w("```")
    try:
        with open(os.path.join(od, "commands.txt")) as f:
            out.extend(l.rstrip("\n") for l in f)
    except OSError:
        pass
    w("```")
    w("")

    # ----------------------------------------------------------------- table
    cols = [(label, m) for label, m in PEER_COLS if any(r in runners_seen for r in m.values())]
    head = ["case", "op", "size", "collcomm µs", "collcomm GB/s"]
    for label, _ in cols:
        head += [f"{label} µs", f"{label} GB/s"]
    head.append("collcomm vs best peer")
    ratio_cols = [label for label, _ in cols if label in RATIO_COLS]
    head += [f"collcomm vs {label}" for label in ratio_cols]
    w("| " + " | ".join(head) + " |")
    w("|" + "---|" * len(head))
    med_rows = []
    phase_rows = []  # cells with far repetitions, compared phase by phase
    noisy = [0]
    far_cells = [0]
    for case, op, req in order:
        n = nranks[case]
        factor = OPS[op][2](n)
        variant = OPS[op][0]

        def show(runner):
            c = cells.get((case, op, runner, req))
            if c is None:
                return "–", "–", None
            t = c.median()
            bw = (c.size or req) / (t * 1e-6) / 1e9 * factor if t else None
            reps = len(c.times) + len(c.fails)
            med_rows.append([case, op, runner, variant, c.size or expected_size(op, req, n), n,
                             len(c.times), len(c.fails),
                             f"{t:.3f}" if t else "", f"{min(c.times):.3f}" if c.times else "",
                             f"{max(c.times):.3f}" if c.times else "", f"{bw:.4f}" if bw else "",
                             f"{statistics.median(c.other):.3f}" if c.other else "", c.far,
                             f"{c.phase_median('near'):.3f}" if c.by_phase["near"] else "",
                             f"{c.phase_median('far'):.3f}" if c.by_phase["far"] else ""])
            if c.fails:
                logs = sorted({l for l, _ in c.fails})
                why = c.fails[0][1]
                tag = f"FAILED{'' if not c.times else f' {len(c.fails)}/{reps}'} ({why}: {', '.join(logs)})"
                if not c.times:
                    return f"**{tag}**", "FAILED", None
                return f"{fmt_t(t)} **{tag}**", fmt_bw(bw), t
            mark = ""
            if len(c.times) > 1 and min(c.times) > 0 and max(c.times) / min(c.times) > NOISY:
                mark = " †"
                noisy[0] += 1
            if c.far:
                mark += f" ‡{c.far}"
                far_cells[0] += 1
            return fmt_t(t) + mark, fmt_bw(bw), t

        cct, ccb, cc_t = show("collcomm")
        row = [CASE_TITLE.get(case, case), op + (" (in-place)" if op == "broadcast" else ""), size_label(req), cct, ccb]
        best = None  # (time, label)
        peer_t = {}  # label -> median time
        for label, m in cols:
            r = m.get(case)
            if r is None or r not in runners_seen:
                row += ["–", "–"]
                continue
            pt, pb, p_t = show(r)
            row += [pt, pb]
            if p_t is not None:
                peer_t[label] = p_t
            if p_t is not None and (best is None or p_t < best[0]):
                best = (p_t, label)
        kind = "lat" if req < LAT_LIMIT else "busbw"
        if cc_t is None or best is None:
            ratio = "–"
        else:
            ratio = f"{speedup(case, op, req, n, cc_t, best[0], cells):.2f} ({kind}, vs {best[1]})"
        row.append(ratio)
        for label in ratio_cols:
            t = peer_t.get(label)
            row.append("–" if cc_t is None or t is None else f"{speedup(case, op, req, n, cc_t, t, cells):.2f} ({kind})")
        w("| " + " | ".join(row) + " |")
        phase_row = by_phase(case, op, req, n, cols, runners_seen, cells)
        if phase_row:
            phase_rows.append(phase_row)

    w("")
    w("µs: mean time per operation of the slowest rank, median over repetitions; GB/s: busbw from that "
      "time (nccl-tests factors: allreduce 2(n−1)/n, allgather and reduce_scatter (n−1)/n, broadcast 1). "
      "Sizes follow nccl-tests on both sides (allgather: the gathered output; reduce_scatter: the input). "
      "collcomm's column is out-of-place, like MPI_Allreduce/Allgather/Reduce_scatter_block, except "
      "broadcast: in-place, like MPI_Bcast (the other variant is in medians.tsv). "
      f"Last column: best peer time / collcomm time below {LAT_LIMIT // 1024} KiB, collcomm busbw / best peer "
      "busbw from there: above 1, collcomm is faster."
      + (" " + ", ".join(f"\"collcomm vs {l}\"" for l in ratio_cols) + ": the same ratio against that peer alone."
         if ratio_cols else ""))
    w("")
    if noisy[0]:
        w(f"†: the slowest repetition took more than {NOISY:g}× the fastest ({noisy[0]} cells): the machine was "
          "busy; the minimum and maximum are in medians.tsv. Rerun before quoting those.")
        w("")
    if probes:
        near = [p for p in probes if p <= FAR_NS]
        w(f"Phase probe (a cache line's round trip between the first two CPUs, before and after every command): "
          + (f"near {min(near):.0f}-{max(near):.0f} ns" if near else "never near")
          + (f"; far (> {FAR_NS:g} ns, up to {max(probes):.0f}) around {far_runs} command(s)" if far_runs else
             "; never far")
          + ".")
        if far_cells[0]:
            w(f"‡k: k of the cell's repetitions started or ended with the CPUs far apart ({far_cells[0]} cells); "
              "cross-core hand-offs cost several times more then (docs/performance.md, \"The development VM's two phases\").")
        w("")
        if phase_rows:
            w("The ‡ cells phase by phase: medians over the near repetitions and over the far ones (their count "
              "in brackets), each side's against the best peer's in the same phase:")
            w("")
            w("| case | op | size | near: collcomm µs | near: best peer µs | near: ratio "
              "| far: collcomm µs | far: best peer µs | far: ratio |")
            w("|---|---|---|---|---|---|---|---|---|")
            out.extend(phase_rows)
            w("")
    targets = target_rows(order, nranks, cells, bool(probes))
    w("Issue 6's targets in this run: the worst cell of each (collcomm against the peers the target "
      "names; time ratio below 64 KiB, busbw ratio from there), over the overall medians and over the "
      "near repetitions' medians. The planner target is checked by planner_check.sh.")
    w("")
    w("| target | worst cell | holds | worst cell, near phase | holds, near phase |")
    w("|---|---|---|---|---|")
    out.extend(targets)
    w("")
    legend = {
        "shm": "**shm**: 2 processes, one per core: collcomm over SHM (`ccrun --bind core`), Open MPI vader "
               "(ob1), MPICH (ch4, shared memory)"
               + (", oneCCL (under Open MPI's mpirun; OFI shm provider, collectives driven by the calling "
                  "thread: `CCL_ATL_SHM=1 CCL_WORKER_OFFLOAD=0`)" if "oneccl" in runners_seen else "") + ".",
        "oversub": "**4 ranks on 2 cores**: no binding; Open MPI vader in its default yield mode "
                   "(`--oversubscribe --bind-to none`).",
        "net": "**NET**: 2 processes pinned; collcomm's socket transport (`COLLCOMM_P2P_DISABLE=1 "
               "COLLCOMM_SHM_DISABLE=1 COLLCOMM_SOCKET_IFNAME=lo`) vs Open MPI btl tcp on lo and Gloo's TCP "
               "ring (its default allreduce, out-of-place).",
    }
    cases_run = []
    for case, _, _ in order:
        if case not in cases_run:
            cases_run.append(case)
    w("Cases: " + " ".join(legend.get(c, c) for c in cases_run))
    notes = []
    try:
        with open(os.path.join(od, "notes.txt")) as f:
            notes = [l.strip() for l in f if l.strip()]
    except OSError:
        pass
    if host.get("build_failures", "0") not in ("", "0"):
        notes.append(f"{host['build_failures']} peer build(s) failed: see raw/build-*.log")
    for n_ in notes:
        w("")
        w(f"Note: {n_}")
    w("")
    if failed_runs:
        w(f"### Failed runs ({len(failed_runs)})")
        w("")
        for case, op, runner, rep, rc, rel in failed_runs:
            w(f"- {runner} {case} {op} rep {rep}: exit status {rc}{' (timeout)' if rc in (124, 137) else ''}, log `{rel}`")
    elif any_fail:
        w("### Failures: results missing or wrong in runs that exited 0 (see FAILED cells)")
    else:
        w("All runs succeeded and every result was checked.")

    with open(os.path.join(od, "medians.tsv"), "w") as f:
        f.write("case\top\trunner\tvariant\tsize_B\tnranks\tn_ok\tn_failed\ttime_us_median\ttime_us_min\t"
                "time_us_max\tbusbw_GBs\tcollcomm_other_variant_time_us_median\tfar_reps\t"
                "time_us_near_median\ttime_us_far_median\n")
        for r in med_rows:
            f.write("\t".join(str(x) for x in r) + "\n")
    print("\n".join(out))
    return 1 if any_fail else 0


if __name__ == "__main__":
    sys.exit(main())
