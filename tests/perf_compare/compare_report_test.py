#!/usr/bin/env python3
"""compare_report.py on synthetic runs: medians, the phase split, issue 6's target verdicts, failures,
the oneCCL column and its ratio.

Each case writes an OUT_DIR the way compare.sh does (runs.tsv, host.txt, raw logs with the phase
probe's lines) with times chosen so that every ratio is known exactly, runs the report, and checks
what it prints and writes.
"""
import os
import subprocess
import sys
import tempfile
import unittest

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "compare",
                      "compare_report.py")


def collcomm_log(rows, probe):
    """rows: {size: (oop_us, ip_us)}; probe: (before_ns, after_ns)."""
    out = ["# cmd: ccrun ...", f"# phase_probe before {probe[0]}"]
    for size, (oop, ip) in rows.items():
        out.append(f"[0] {size:>12} {size // 4:>12} float sum -1 {oop} 0.00 0.00 0 {ip} 0.00 0.00 0")
    out += [f"# phase_probe after {probe[1]}", "# exit status: 0"]
    return "\n".join(out) + "\n"


def peer_log(op, rows, probe, check="ok"):
    out = ["# cmd: mpirun ...", f"# phase_probe before {probe[0]}",
           "# op size_B count/rank iters time_us algbw_GBs busbw_GBs check"]
    for size, t in rows.items():
        out.append(f"  {op} {size} {size // 4} 100 {t} 0.0 0.0 {check}")
    out += [f"# phase_probe after {probe[1]}", "# exit status: 0"]
    return "\n".join(out) + "\n"


class Run:
    """A synthetic compare output directory."""

    def __init__(self, tmp):
        self.dir = tmp
        os.makedirs(os.path.join(tmp, "raw"))
        self.runs = ["case\top\trunner\trep\tnranks\tsizes\trc\tlog"]
        with open(os.path.join(tmp, "host.txt"), "w") as f:
            f.write("date=test\nreps=2\n")

    def add(self, case, op, runner, rep, sizes, text, rc=0, nranks=2):
        log = os.path.join(self.dir, "raw", f"{runner}.{case}.{op}.{'-'.join(map(str, sizes))}.{rep}.txt")
        with open(log, "w") as f:
            f.write(text)
        self.runs.append("\t".join(map(str, [case, op, runner, rep, nranks, ",".join(map(str, sizes)), rc, log])))

    def report(self):
        with open(os.path.join(self.dir, "runs.tsv"), "w") as f:
            f.write("\n".join(self.runs) + "\n")
        p = subprocess.run([sys.executable, REPORT, "--out-dir", self.dir], capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout

    def medians(self):
        with open(os.path.join(self.dir, "medians.tsv")) as f:
            head, *rows = [l.rstrip("\n").split("\t") for l in f]
        return [dict(zip(head, r)) for r in rows]


NEAR, FAR = (100.0, 104.0), (480.0, 510.0)
MIB = 1 << 20


def table_row(text, first_cell):
    for line in text.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row starting with {first_cell!r} in:\n{text}")


class CompareReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run = Run(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def add_shm_allreduce(self):
        # 8 B: near collcomm 0.10 vs Open MPI 0.20 (2.00); far collcomm 0.60 vs 0.30 (0.50).
        # 16 MiB: near 2000 vs 5000 us (busbw 2.50); far 3000 vs 5400 (1.80).
        r = self.run
        r.add("shm", "allreduce", "collcomm", 1, [8], collcomm_log({8: (0.10, 0.09)}, NEAR))
        r.add("shm", "allreduce", "collcomm", 2, [8], collcomm_log({8: (0.60, 0.50)}, FAR))
        r.add("shm", "allreduce", "collcomm", 1, [16 * MIB], collcomm_log({16 * MIB: (2000.0, 1900.0)}, NEAR))
        r.add("shm", "allreduce", "collcomm", 2, [16 * MIB], collcomm_log({16 * MIB: (3000.0, 2900.0)}, FAR))
        r.add("shm", "allreduce", "ompi-vader", 1, [8, 16 * MIB],
              peer_log("allreduce", {8: 0.20, 16 * MIB: 5000.0}, NEAR))
        r.add("shm", "allreduce", "ompi-vader", 2, [8, 16 * MIB],
              peer_log("allreduce", {8: 0.30, 16 * MIB: 5400.0}, FAR))

    def test_targets_overall_and_near(self):
        self.add_shm_allreduce()
        rc, out = self.run.report()
        self.assertEqual(rc, 0, out)
        # Overall medians: 8 B collcomm 0.35 vs 0.25 (0.71, fails); 16 MiB 2500 vs 5200 (2.08, holds).
        row = table_row(out, "allreduce 8 B: latency ≤ Open MPI")
        self.assertEqual(row[1:], ["0.71 (8 B)", "**no**", "2.00 (8 B)", "yes"])
        row = table_row(out, "allreduce 16 MiB: busbw ≥ 2× Open MPI")
        self.assertEqual(row[1:], ["2.08 (16 MiB)", "yes", "2.50 (16 MiB)", "yes"])
        # Targets whose cells the run left out say so.
        self.assertIn("| NET 8 B: latency ≤ Open MPI TCP (not in this run) | – | – | – | – |", out)

    def test_phase_table_and_medians(self):
        self.add_shm_allreduce()
        rc, out = self.run.report()
        self.assertEqual(rc, 0, out)
        row = table_row(out, "shm, 2 proc pinned")  # the first: the main table's 8 B row
        self.assertEqual(row[2], "8 B")
        self.assertIn("‡1", row[3])  # one of collcomm's two repetitions was far
        lines = [l for l in out.splitlines() if l.startswith("| shm, 2 proc pinned | allreduce | 16 MiB | 2000")]
        self.assertEqual(len(lines), 1, out)
        cells = [c.strip() for c in lines[0].strip("|").split("|")]
        self.assertEqual(cells[3:], ["2000.0 (1)", "5000.0 (1, Open MPI)", "2.50",
                                     "3000.0 (1)", "5400.0 (1, Open MPI)", "1.80"])
        med = {(m["runner"], m["size_B"]): m for m in self.run.medians()}
        cc = med[("collcomm", "8")]
        self.assertEqual((cc["time_us_median"], cc["far_reps"], cc["time_us_near_median"], cc["time_us_far_median"]),
                         ("0.350", "1", "0.100", "0.600"))
        self.assertEqual(med[("ompi-vader", str(16 * MIB))]["time_us_far_median"], "5400.000")

    def test_oneccl_column_and_ratio(self):
        # collcomm 8 B 0.10 us, 16 MiB 2000 us; Open MPI 0.20 / 5000; oneCCL 0.15 / 8000 (faster than
        # Open MPI at 8 B, slower at 16 MiB): the best-peer ratio follows the better of the two per size,
        # the oneCCL column is against oneCCL alone.
        r = self.run
        r.add("shm", "allreduce", "collcomm", 1, [8], collcomm_log({8: (0.10, 0.09)}, NEAR))
        r.add("shm", "allreduce", "collcomm", 1, [16 * MIB], collcomm_log({16 * MIB: (2000.0, 1900.0)}, NEAR))
        r.add("shm", "allreduce", "ompi-vader", 1, [8, 16 * MIB],
              peer_log("allreduce", {8: 0.20, 16 * MIB: 5000.0}, NEAR))
        r.add("shm", "allreduce", "oneccl", 1, [8, 16 * MIB],
              peer_log("allreduce", {8: 0.15, 16 * MIB: 8000.0}, NEAR))
        rc, out = r.report()
        self.assertEqual(rc, 0, out)
        head = table_row(out, "case")
        self.assertEqual(head[-5:], ["Open MPI GB/s", "oneCCL µs", "oneCCL GB/s", "collcomm vs best peer",
                                     "collcomm vs oneCCL"])
        lines = [l for l in out.splitlines() if l.startswith("| shm, 2 proc pinned | allreduce |")]
        self.assertEqual(len(lines), 2, out)
        small, big = ([c.strip() for c in l.strip("|").split("|")] for l in lines)
        self.assertEqual(small[2], "8 B")
        self.assertEqual(small[-4], "0.15")  # oneCCL µs
        self.assertEqual(small[-2:], ["1.50 (lat, vs oneCCL)", "1.50 (lat)"])
        self.assertEqual(big[2], "16 MiB")
        self.assertEqual(big[-4], "8000.0")
        self.assertEqual(big[-2:], ["2.50 (busbw, vs Open MPI)", "4.00 (busbw)"])
        med = {(m["runner"], m["size_B"]): m for m in self.run.medians()}
        self.assertEqual(med[("oneccl", str(16 * MIB))]["time_us_median"], "8000.000")
        self.assertIn("oneCCL (under Open MPI's mpirun", out)

    def test_no_oneccl_column_without_oneccl_runs(self):
        self.add_shm_allreduce()
        rc, out = self.run.report()
        self.assertEqual(rc, 0, out)
        self.assertEqual(table_row(out, "case")[-1], "collcomm vs best peer")
        self.assertNotIn("oneCCL (under", out)

    def test_unprobed_run_has_no_near_verdict(self):
        r = self.run
        r.add("net", "allreduce", "collcomm", 1, [8], collcomm_log({8: (7.0, 7.0)}, NEAR).replace("phase_probe", "x"))
        r.add("net", "allreduce", "ompi-tcp", 1, [8], peer_log("allreduce", {8: 8.4}, NEAR).replace("phase_probe", "x"))
        rc, out = r.report()
        self.assertEqual(rc, 0, out)
        row = table_row(out, "NET 8 B: latency ≤ Open MPI TCP")
        self.assertEqual(row[1:], ["1.20 (8 B)", "yes", "–", "–"])

    def test_failed_run_fails_the_report(self):
        r = self.run
        r.add("net", "allreduce", "collcomm", 1, [8], "# cmd: ccrun ...\n# exit status: 1\n", rc=1)
        r.add("net", "allreduce", "ompi-tcp", 1, [8], peer_log("allreduce", {8: 8.4}, NEAR))
        rc, out = r.report()
        self.assertEqual(rc, 1, out)
        self.assertIn("FAILED", out)
        self.assertIn("| NET 8 B: latency ≤ Open MPI TCP (cells missing) | – | – | – | – |", out)

    def test_wrong_peer_result_is_not_compared(self):
        r = self.run
        r.add("net", "allreduce", "collcomm", 1, [8], collcomm_log({8: (7.0, 7.0)}, NEAR))
        r.add("net", "allreduce", "ompi-tcp", 1, [8], peer_log("allreduce", {8: 8.4}, NEAR, check="WRONG"))
        rc, out = r.report()
        self.assertEqual(rc, 1, out)
        self.assertIn("check WRONG", out)
        self.assertIn("| NET 8 B: latency ≤ Open MPI TCP (cells missing) | – | – | – | – |", out)


if __name__ == "__main__":
    unittest.main()
