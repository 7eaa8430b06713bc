#!/usr/bin/env python3
"""cc-plan's predictions against published measurements (tests/fixtures/published/).

For every row of the table: runs cc-plan --json on the row's topology fixture for each GPU count and
power-of-two size the row covers, and compares the predicted busbw with the published value (or
range). Prints the error of every row (the table in docs/planning.md is this output). Fails when a
`check` row is outside its tolerance, or a `known-miss` row is inside it (the table should then
say `check`); `not-modelled` rows are skipped, saying why.

Usage: published_test.py CC_PLAN SOURCE_DIR [TABLE]
       published_test.py --self-test CC_PLAN SOURCE_DIR   the checker catches an injected miss
"""
import csv
import json
import os
import subprocess
import sys
import tempfile


def read_table(path):
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


def gpu_counts(text):
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(text)]


def sizes(lo, hi):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def predict(cc_plan, topo, nodes, gpus, op, algo, size):
    cmd = [cc_plan, "--topo", topo, "--nodes", str(nodes), "--gpus", str(gpus), "--op", op, "-b", str(size),
           "-e", str(size), "--json"]
    if algo not in ("any", ""):
        cmd += ["--algo", algo]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), run.returncode, run.stderr.strip()))
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    rows = [r for r in rows if "size" in r]
    if len(rows) != 1 or rows[0]["size"] != size:
        raise RuntimeError("%s printed %d size rows, expected one of %d bytes" % (" ".join(cmd), len(rows), size))
    return rows[0]


def rel_error(pred, lo, hi):
    """Signed error against the published range: 0 inside it, else relative to the nearer end."""
    if pred < lo:
        return pred / lo - 1
    if pred > hi:
        return pred / hi - 1
    return 0.0


def check(cc_plan, source_dir, table_path, out=sys.stdout):
    failures = []
    for row in read_table(table_path):
        rid, status = row["id"], row["status"]
        if status == "not-modelled":
            print("%-20s SKIP  not modelled: %s" % (rid, row["note"]), file=out)
            continue
        topo = os.path.join(source_dir, "tests", "fixtures", "topologies", row["topo"])
        lo, hi = float(row["busbw_lo"]), float(row["busbw_hi"])
        tol = float(row["tolerance"])
        worst, worst_at, inside = 0.0, "", True
        for g in gpu_counts(row["gpus"]):
            for s in sizes(int(row["size_lo"]), int(row["size_hi"])):
                p = predict(cc_plan, topo, int(row["nodes"]), g, row["op"], row["algo"], s)
                err = rel_error(p["busbw"], lo, hi)
                if abs(err) > tol:
                    inside = False
                if abs(err) >= abs(worst) or not worst_at:
                    worst = err
                    worst_at = "%s x %d GPUs, %d B: predicted %.1f GB/s (%s %s, %d ch, %.1f us)" % (
                        row["nodes"], g, s, p["busbw"], p["algo"], p["proto"], p["channels"], p["time_us"])
        published = ("%.1f" % lo) if lo == hi else ("%.1f-%.1f" % (lo, hi))
        verdict = "ok" if inside else "MISS"
        print("%-20s %-4s  published %s GB/s, worst error %+.1f%% (bound %.0f%%) at %s" % (
            rid, verdict, published, 100 * worst, 100 * tol, worst_at), file=out)
        if status == "check" and not inside:
            failures.append("%s: outside %.0f%% of the published %s GB/s" % (rid, 100 * tol, published))
        elif status == "known-miss" and inside:
            failures.append("%s: marked known-miss but now within %.0f%%: make it 'check'" % (rid, 100 * tol))
        elif status == "known-miss":
            print("%-20s       (known miss: %s)" % ("", row["note"]), file=out)
        elif status != "check":
            failures.append("%s: unknown status '%s'" % (rid, status))
    return failures


def self_test(cc_plan, source_dir):
    table = os.path.join(source_dir, "tests", "fixtures", "published", "allreduce_busbw.csv")
    rows = read_table(table)
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            for r in rows:
                if r["id"] == "a100-16GiB":
                    r = dict(r, busbw_lo="500.0", busbw_hi="500.0")  # far above what 8 A100s can carry
                w.writerow(r)
        with open(os.devnull, "w") as sink:
            failures = check(cc_plan, source_dir, bad, out=sink)
    if not any(f.startswith("a100-16GiB") for f in failures):
        print("self-test: an injected 500 GB/s row was not caught: %s" % failures)
        return 1
    print("self-test: the injected row was caught: %s" % failures)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "--self-test":
        return self_test(argv[1], argv[2])
    if len(argv) < 2:
        print(__doc__)
        return 2
    cc_plan, source_dir = argv[0], argv[1]
    table = argv[2] if len(argv) > 2 else os.path.join(source_dir, "tests", "fixtures", "published",
                                                       "allreduce_busbw.csv")
    failures = check(cc_plan, source_dir, table)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
