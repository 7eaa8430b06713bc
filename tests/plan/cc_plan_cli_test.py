#!/usr/bin/env python3
"""cc-plan's command line: nccl-tests' columns and one row per size, JSON lines, --version, several
nodes (rail-aware channels, trees in the JSON), --algo, and a sentence with exit code 2 for every bad
argument.

Usage: cc_plan_cli_test.py CC_PLAN SOURCE_DIR
"""
import json
import os
import sys

from cc_plan_checks import Checks, run_cc_plan, topology


def main(argv):
    cc_plan, source_dir = argv[0], argv[1]
    topo = topology(source_dir, "dgx_a100.xml")
    checks = Checks()
    expect = checks.expect

    r = run_cc_plan(cc_plan, "--topo", topo, "-b", "8", "-e", "1M", "-f", "4")
    expect(r.returncode == 0, "plain sweep exits 0, got %d: %s" % (r.returncode, r.stderr))
    header = [l for l in r.stdout.splitlines() if l.startswith("#") and "size" in l]
    expect(header and all(c in header[0] for c in ("size", "count", "type", "redop", "root", "time", "algbw",
                                                   "busbw", "algo", "proto")), "header columns: %s" % header)
    rows = [l.split() for l in r.stdout.splitlines() if l.strip() and not l.startswith("#")]
    expect([int(x[0]) for x in rows] == [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288],
           "one row per size 8..1M x4: %s" % [x[0] for x in rows])
    expect(all(x[2] == "float" and x[3] == "sum" and x[4] == "-1" and x[8] == "Ring" for x in rows),
           "type/redop/root/algo columns: %s" % rows[:2])

    r = run_cc_plan(cc_plan, "--topo", topo, "--op", "allgather", "-b", "1M", "-e", "1M", "--json")
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    expect(r.returncode == 0 and len(lines) == 2 and lines[0]["ring"] == list(range(8)),
           "--json: the rings, then one row: %s" % r.stdout)
    if len(lines) == 2:
        row = lines[1]
        expect(row["size"] == 1048576 and row["count"] == 262144 and row["redop"] == "none",
               "allgather row: %s" % row)
        expect(abs(row["busbw"] - row["algbw"] * 7 / 8) < 0.02, "allgather busbw = algbw x 7/8: %s" % row)

    r = run_cc_plan(cc_plan, "--topo", topo, "--op", "broadcast", "-b", "1G", "-e", "1G", "--proto", "ll", "--json")
    row = json.loads(r.stdout.splitlines()[-1]) if r.returncode == 0 else {}
    expect(row.get("proto") == "LL" and row.get("root") == 0, "--proto ll is obeyed, broadcast root 0: %s" % row)

    # Several nodes: one channel per NIC (rail-aware), the ring crossing the network once per node,
    # the trees listed (every rank has a parent but the root), and the model's algorithm per row.
    r = run_cc_plan(cc_plan, "--topo", topo, "--nodes", "4", "-b", "8", "-e", "16G", "-f", "16", "--json")
    lines = [json.loads(l) for l in r.stdout.splitlines()] if r.returncode == 0 else []
    expect(len(lines) > 2, "--nodes 4 --json: %d %s" % (r.returncode, r.stderr))
    if lines:
        head = lines[0]
        expect(head["nodes"] == 4 and head["ranks"] == 32 and head["net_crossings_per_channel"] == 4,
               "multi-node header: %s" % head)
        nets = [c["net"] for c in head["channels"]]
        expect(len(nets) == head["max_channels"] == 8 and len(set(nets)) == 8, "one channel per NIC: %s" % nets)
        expect(all(sorted(c["gpus"]) == list(range(8)) for c in head["channels"]),
               "each channel visits every GPU of a node once: %s" % head["channels"])
        trees = head.get("trees") or []
        expect(len(trees) == 2 and all(sum(1 for p in t["parent"] if p < 0) == 1 and len(t["parent"]) == 32
                                       for t in trees), "two trees over 32 ranks: %s" % trees)
        algos = {row["algo"] for row in lines[1:]}
        expect(algos <= {"Ring", "Tree"} and lines[-1]["algo"] == "Ring", "algos per row: %s" % lines[1:])
    r = run_cc_plan(cc_plan, "--topo", topo, "--nodes", "64", "--algo", "tree", "-b", "1M", "-e", "1M", "--json")
    row = json.loads(r.stdout.splitlines()[-1]) if r.returncode == 0 else {}
    expect(row.get("algo") == "Tree", "--algo tree is obeyed: %s %s" % (row, r.stderr))
    r = run_cc_plan(cc_plan, "--topo", topo, "--nodes", "2", "--algo", "ring", "-b", "1M", "-e", "1M")
    rows = [l.split() for l in r.stdout.splitlines() if l.strip() and not l.startswith("#")]
    expect(r.returncode == 0 and rows and rows[0][8] == "Ring", "--algo ring is obeyed: %s" % rows)

    r = run_cc_plan(cc_plan, "--version")
    expect(r.returncode == 0 and r.stdout.startswith("cc-plan (collcomm version "), "--version: %s" % r.stdout)

    bad = [
        ["--topo", topo, "--nodes", "0"],
        ["--topo", topo, "--nodes", "2x"],
        ["--topo", topo, "--algo", "tree", "--op", "allgather"],
        ["--topo", topo, "--algo", "nvls"],
        ["--topo", topo, "--nodes", "2", "--channels", "9"],
        ["--topo", topo, "--proto", "ll256"],
        ["--topo", topo, "--op", "alltoall"],
        ["--topo", topo, "-b", "8X"],
        ["--topo", topo, "-b", "1G", "-e", "1M"],
        ["--topo", topo, "-f", "1"],
        ["--topo", topo, "--gpus", "9"],
        ["--topo", topo, "--gpus", "0"],
        ["--topo", topo, "--channels", "99"],
        ["--topo", topo, "-d", "float7"],
        ["--topo"],
        ["-b", "8"],
        ["--frobnicate"],
    ]
    for args in bad:
        r = run_cc_plan(cc_plan, *args)
        expect(r.returncode == 2 and r.stderr.startswith("cc-plan: ") and len(r.stderr.split()) > 3
               and not r.stdout, "%s: exit 2 and a sentence, got %d: %r" % (args, r.returncode, r.stderr))
    r = run_cc_plan(cc_plan, "--topo", os.path.join(source_dir, "no-such-file.xml"))
    expect(r.returncode == 1 and "no-such-file.xml" in r.stderr, "missing file: exit 1 naming it: %r" % r.stderr)

    return checks.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
