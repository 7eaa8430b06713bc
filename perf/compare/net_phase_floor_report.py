#!/usr/bin/env python3
"""Report of net_phase_floor.sh: its rounds, phase by phase, against issue 6's NET target.

    net_phase_floor_report.py ROUNDS.tsv [SIZE_LABEL]

ROUNDS.tsv has a header and one row per round: time, probe_before_ns, probe_after_ns, bare_us (16
MiB buffers), bare_hot_us (a ring that stays in cache), collcomm_oop_us, collcomm_ip_us, openmpi_us
and, where the rounds have them, staged_us and leastcopy_us (socket_floor's bare two-rank allreduce
with a FIFO's copies, and with the fewest copies) ("-" where a command gave nothing). A round is near
when both probes are at most FAR_NS, far when both are above it, and left out when they disagree
(the phase changed during the round) or a value is missing. For each phase: the medians, the
median of the per-round ratios Open MPI / collcomm (what compare.sh's busbw ratio is for one size),
and the time a 2x target asks for (Open MPI / 2) beside the bare exchanges'. Exit status 0, or 2
for unreadable input.
"""
import statistics
import sys

FAR_NS = 200.0  # as compare_report.py: a probe round trip above this counts as far
TARGET = 2.0    # issue 6: busbw >= 2x Open MPI TCP at 16 MiB
COLUMNS = ["bare_us", "bare_hot_us", "collcomm_oop_us", "collcomm_ip_us", "openmpi_us"]
OPTIONAL = ["staged_us", "leastcopy_us"]  # rounds files from before 2026-11-25 (late) lack them


def read_rounds(path):
    with open(path) as f:
        lines = [ln.rstrip("\n").split("\t") for ln in f if ln.strip()]
    if not lines or lines[0][:3] != ["time", "probe_before_ns", "probe_after_ns"]:
        raise ValueError(f"{path}: not a net_phase_floor rounds file")
    header = lines[0]
    wanted = ["probe_before_ns", "probe_after_ns"] + COLUMNS + [c for c in OPTIONAL if c in header]
    rounds = []
    for cells in lines[1:]:
        row = dict(zip(header, cells))
        try:
            rounds.append({k: float(row[k]) for k in wanted})
        except (KeyError, ValueError):
            continue  # a command failed or printed nothing: the round says nothing
    return rounds, len(lines) - 1


def phase_of(r):
    near = [p <= FAR_NS for p in (r["probe_before_ns"], r["probe_after_ns"])]
    return "near" if all(near) else "far" if not any(near) else None


def summarize(rounds):
    """{phase: {n, medians per column, ratio_oop, ratio_ip, target_us}} for the phases seen."""
    out = {}
    for phase in ("near", "far"):
        rs = [r for r in rounds if phase_of(r) == phase]
        if not rs:
            continue
        med = {c: statistics.median(r[c] for r in rs) for c in COLUMNS + OPTIONAL if c in rs[0]}
        out[phase] = {
            "n": len(rs),
            "median": med,
            "ratio_oop": statistics.median(r["openmpi_us"] / r["collcomm_oop_us"] for r in rs),
            "ratio_ip": statistics.median(r["openmpi_us"] / r["collcomm_ip_us"] for r in rs),
            "target_us": med["openmpi_us"] / TARGET,
        }
    return out


def report(rounds, total, size):
    s = summarize(rounds)
    lines = [f"# NET allreduce {size} over loopback, phase by phase: {total} rounds, "
             f"{sum(v['n'] for v in s.values())} with both probes in one phase (far: > {FAR_NS:g} ns)", "",
             "| phase | rounds | bare exchange µs | bare, hot buffers µs | bare allreduce, FIFO copies µs "
             "| bare allreduce, fewest copies µs | collcomm out of place µs | collcomm in place µs | Open MPI µs "
             f"| Open MPI / collcomm, out of place | in place | {TARGET:g}x target µs | bare exchange / target |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for phase, v in s.items():
        m = v["median"]
        opt = " | ".join(f"{m[c]:.0f}" if c in m else "–" for c in OPTIONAL)
        lines.append(f"| {phase} | {v['n']} | {m['bare_us']:.0f} | {m['bare_hot_us']:.0f} | {opt} | "
                     f"{m['collcomm_oop_us']:.0f} | {m['collcomm_ip_us']:.0f} | {m['openmpi_us']:.0f} | "
                     f"{v['ratio_oop']:.2f} | {v['ratio_ip']:.2f} | {v['target_us']:.0f} | "
                     f"{m['bare_us'] / v['target_us']:.2f} |")
    lines.append("")
    for phase, v in s.items():
        m = v["median"]
        holds = v["ratio_oop"] >= TARGET
        verdict = "holds" if holds else "does not hold"
        floor = ("a bare exchange of the same bytes between the same buffers, reducing nothing, takes "
                 f"{m['bare_us']:.0f} µs ({m['bare_hot_us']:.0f} from buffers that stay in cache): "
                 f"{'above' if m['bare_us'] > v['target_us'] else 'within'} the "
                 f"{v['target_us']:.0f} µs the target asks for")
        if "staged_us" in m and "leastcopy_us" in m:
            best = min(m["staged_us"], m["leastcopy_us"])
            floor += (f"; the same allreduce with no library around it takes {m['staged_us']:.0f} µs with a FIFO's "
                      f"copies and {m['leastcopy_us']:.0f} with the fewest copies: the better of them "
                      f"{'above' if best > v['target_us'] else 'within'} the target")
        lines.append(f"- {phase}: the {TARGET:g}x target {verdict} out of place ({v['ratio_oop']:.2f}); {floor}.")
    if not s:
        lines.append("- no round had both probes in one phase with every command's result.")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        rounds, total = read_rounds(argv[1])
    except (OSError, ValueError) as e:
        print(f"net_phase_floor_report: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(report(rounds, total, argv[2] if len(argv) > 2 else "?"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
