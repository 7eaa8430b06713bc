#!/usr/bin/env python3
"""cc-plan --host: nccl-tests' columns per size with the planner's choices at the crossings
plan/tuner.cc documents (LL to 16 B, one-shot while a rank receives at most 64 KiB, 256 KiB for two
ranks over NET, Direct between threads from 16 KiB, the host model's argmin across hosts:
docs/planning.md), JSON lines, and a sentence with exit code 2 for every combination that makes no
sense. (unit/plan/cc_plan_host_test.cc checks every row against planCollective and the host model.)

Usage: cc_plan_host_test.py CC_PLAN
"""
import json
import sys

from cc_plan_checks import Checks, run_cc_plan


def choices(cc_plan, *args):
    """{size: (algo, proto)} of cc-plan --host --json with `args`."""
    r = run_cc_plan(cc_plan, "--host", "--json", *args)
    if r.returncode != 0:
        return {}
    return {row["size"]: (row["algo"], row["proto"]) for row in map(json.loads, r.stdout.splitlines()[1:])}


def main(argv):
    cc_plan = argv[0]
    checks = Checks()
    expect = checks.expect

    r = run_cc_plan(cc_plan, "--host", "--ranks", "4", "-b", "8", "-e", "1M", "-f", "4")
    expect(r.returncode == 0, "plain host sweep exits 0, got %d: %s" % (r.returncode, r.stderr))
    header = [l for l in r.stdout.splitlines() if l.startswith("#") and "size" in l]
    expect(header and all(c in header[0] for c in ("size", "count", "type", "redop", "root", "time", "algbw",
                                                   "busbw", "algo", "proto", "#ch")), "header columns: %s" % header)
    expect("4 rank(s), threads of one process (link class threads)" in r.stdout, "the job line: %s" % r.stdout)
    rows = [l.split() for l in r.stdout.splitlines() if l.strip() and not l.startswith("#")]
    expect([int(x[0]) for x in rows] == [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288],
           "one row per size 8..1M x4: %s" % [x[0] for x in rows])
    expect(all(x[2] == "float" and x[3] == "sum" and x[4] == "-1" and float(x[5]) > 0 and x[10] == "1"
               for x in rows), "type/redop/root/time/channels columns: %s" % rows[:2])

    # Within a host, the measured thresholds.
    c = choices(cc_plan, "--ranks", "2", "-b", "16", "-e", "8M")
    expect(c.get(16) == ("OneShot", "LL") and c.get(32) == ("OneShot", "Simple"), "2 threads, LL to 16 B: %s" % c)
    expect(c.get(2048) == ("OneShot", "Simple") and c.get(4096) == ("Direct", "Simple")
           and c.get(8 << 20) == ("Direct", "Simple"), "2 threads, Direct from 4 KiB: %s" % c)
    # Four threads on two CPUs: Direct AllReduce from 16 KiB (the oversubscribed thresholds).
    c = choices(cc_plan, "--ranks", "4", "--cpus", "2", "-b", "8K", "-e", "16K")
    expect(c.get(8192) == ("OneShot", "Simple") and c.get(16384) == ("Direct", "Simple"),
           "4 threads on 2 CPUs, Direct from 16 KiB: %s" % c)
    c = choices(cc_plan, "--ranks", "2", "--processes", "-b", "64K", "-e", "4M")
    expect(c.get(65536) == ("OneShot", "Simple") and c.get(131072) == ("Ring", "Simple"),
           "2 processes, one-shot to 64 KiB: %s" % c)
    expect(c.get(4 << 20) == ("Ring", "Simple"), "2 processes: no Direct unless forced: %s" % c)
    c = choices(cc_plan, "--ranks", "4", "--processes", "-b", "16K", "-e", "32K")
    expect(c.get(16384) == ("OneShot", "Simple") and c.get(32768) == ("Ring", "Simple"),
           "4 processes: one-shot while a rank receives 3 x 16 KiB, not 3 x 32: %s" % c)
    c = choices(cc_plan, "--ranks", "2", "--processes", "--algo", "direct", "-b", "8", "-e", "8")
    expect(c.get(8) == ("Direct", "Simple"), "2 processes, Direct forced: %s" % c)
    # Two ranks over NET: one-shot to 256 KiB. Four hosts: the host model's argmin, Simple throughout
    # (one-shot to 13.9 KB, the tree to 96.6 KB, the ring above).
    c = choices(cc_plan, "--ranks", "2", "--hosts", "2", "-b", "256K", "-e", "512K")
    expect(c.get(256 << 10) == ("OneShot", "Simple") and c.get(512 << 10) == ("Ring", "Simple"),
           "2 ranks over NET, one-shot to 256 KiB: %s" % c)
    c = choices(cc_plan, "--ranks", "4", "--hosts", "4", "-b", "8", "-e", "128K")
    expect(c.get(8) == ("OneShot", "Simple") and c.get(8192) == ("OneShot", "Simple")
           and c.get(16384) == ("Tree", "Simple") and c.get(65536) == ("Tree", "Simple")
           and c.get(131072) == ("Ring", "Simple"), "4 hosts, the model's crossings: %s" % c)

    r = run_cc_plan(cc_plan, "--host", "--ranks", "8", "--hosts", "2", "--op", "allgather", "--choose", "model",
                    "-d", "double", "-b", "1M", "-e", "1M", "--json")
    lines = [json.loads(l) for l in r.stdout.splitlines()] if r.returncode == 0 else []
    expect(len(lines) == 2, "--json: the communicator, then one row: %s %s" % (r.stdout, r.stderr))
    if len(lines) == 2:
        head, row = lines
        expect(head["ranks"] == 8 and head["hosts"] == 2 and head["link_class"] == "net"
               and head["choice"] == "model" and head["op"] == "allgather", "communicator line: %s" % head)
        expect(row["size"] == 1048576 and row["count"] == 131072 and row["type"] == "double"
               and row["redop"] == "none" and row["algo"] == "Ring", "allgather row: %s" % row)
        expect(abs(row["busbw"] - row["algbw"] * 7 / 8) < 0.02, "allgather busbw = algbw x 7/8: %s" % row)

    # Each refusal names what is wrong.
    bad = [
        (["--host", "--topo", "x.xml"], "--topo reads GPU nodes"),
        (["--host", "--nodes", "2"], "--nodes reads GPU nodes"),
        (["--ranks", "4"], "--ranks describes a host communicator: add --host"),
        (["--processes", "-b", "8"], "--processes describes a host communicator"),
        (["--host", "--ranks", "2", "--hosts", "3"], "every host has at least one rank"),
        (["--host", "--ranks", "0"], "--ranks takes a positive count"),
        (["--host", "--ranks", "4", "--hosts", "2", "--processes"], "processes already"),
        (["--host", "--proto", "ll128"], "ll128 is a GPU protocol"),
        (["--host", "--choose", "best"], "--choose takes planner"),
        (["--host", "--simple-step", "0"], "a step is a positive size"),
        (["--host", "--channels", "65"], "at most 64"),
        (["--host", "--ranks", "4", "--op", "broadcast", "--algo", "tree"], "runs allreduce on 2 or more ranks"),
        (["--host", "--ranks", "1", "--algo", "oneshot"], "not allreduce on 1 rank(s)"),
        (["--host", "--ranks", "4", "--hosts", "2", "--algo", "direct"], "ranks of one host"),
        (["--host", "--op", "reduce", "--algo", "direct"], "not reduce"),
        (["--host", "--algo", "direct", "--proto", "ll"], "runs Simple only"),
        (["--host", "-b", "1G", "-e", "1M"], "-b must not exceed -e"),
        (["--topo", "x.xml", "--algo", "oneshot"], "host communicator's algorithm"),
    ]
    for args, words in bad:
        r = run_cc_plan(cc_plan, *args)
        expect(r.returncode == 2 and r.stderr.startswith("cc-plan: ") and words in r.stderr and not r.stdout,
               "%s: exit 2 and a sentence with %r, got %d: %r" % (args, words, r.returncode, r.stderr))

    return checks.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
