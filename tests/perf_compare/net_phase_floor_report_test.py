#!/usr/bin/env python3
"""net_phase_floor_report.py on synthetic rounds: the phase split, the medians, the 2x verdicts.

Each case writes a rounds file the way net_phase_floor.sh does, with times chosen so that every
median and ratio is known exactly, runs the report, and checks the table and verdicts it prints.
"""
import os
import subprocess
import sys
import tempfile
import unittest

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "compare",
                      "net_phase_floor_report.py")
HEADER = "time\tprobe_before_ns\tprobe_after_ns\tbare_us\tbare_hot_us\tcollcomm_oop_us\tcollcomm_ip_us\topenmpi_us"


def run_report(rows, header=HEADER):
    """rows: tuples (probe_before, probe_after, bare, bare_hot, oop, ip, openmpi), '-' allowed."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rounds.tsv")
        with open(path, "w") as f:
            f.write(header + "\n")
            for i, r in enumerate(rows):
                f.write("\t".join([f"12:00:{i:02d}"] + [str(v) for v in r]) + "\n")
        p = subprocess.run([sys.executable, REPORT, path, "16M"], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr


def table_row(out, phase):
    for line in out.splitlines():
        if line.startswith(f"| {phase} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    return None


class NetPhaseFloorReportTest(unittest.TestCase):
    def test_phases_medians_and_ratios(self):
        rows = [
            # near: collcomm 5000/4000/6000 µs, Open MPI 10000 (ratio 2.0, 2.5, 1.6667 -> median 2.0)
            (90, 110, 5200, 4160, 5000, 5100, 10000),
            (80, 120, 5400, 4320, 4000, 4100, 10000),
            (100, 100, 5300, 4240, 6000, 6100, 10000),
            # far: Open MPI / collcomm 9000/12000, 10000/12500, 10800/12000 = 0.75, 0.8, 0.9 -> 0.8
            (500, 600, 11000, 8800, 12000, 12100, 9000),
            (450, 520, 10000, 8000, 12500, 12600, 10000),
            (300, 400, 12000, 9600, 12000, 12200, 10800),
            # the phase changed during the round: left out
            (100, 500, 1, 0, 1, 1, 1000000),
            # a command printed nothing: left out
            (100, 100, 5200, "-", 5000, 5000, 10000),
        ]
        rc, out, err = run_report(rows)
        self.assertEqual(rc, 0, err)
        self.assertIn("8 rounds, 6 with both probes in one phase", out)
        near = table_row(out, "near")
        self.assertEqual(near, ["near", "3", "5300", "4240", "–", "–", "5000", "5100", "10000", "2.00", "1.96", "5000",
                                "1.06"])
        far = table_row(out, "far")
        # medians: bare 11000, from hot buffers 8800, oop 12000, ip 12200, Open MPI 10000; in place
        # 9000/12100, 10000/12600, 10800/12200 -> 0.794; target 5000; bare / target 2.20
        self.assertEqual(far, ["far", "3", "11000", "8800", "–", "–", "12000", "12200", "10000", "0.80", "0.79", "5000",
                               "2.20"])
        self.assertIn("- near: the 2x target holds out of place (2.00)", out)
        self.assertIn("takes 5300 µs (4240 from buffers that stay in cache): above the 5000 µs the target asks for",
                      out)
        self.assertIn("- far: the 2x target does not hold out of place (0.80)", out)

    def test_bare_allreduce_columns(self):
        header = HEADER + "\tstaged_us\tleastcopy_us"
        rows = [
            (100, 100, 5200, 4160, 5000, 5100, 10000, 5100, 6000),
            (100, 100, 5400, 4320, 4000, 4100, 10000, 5300, 5200),
            (100, 100, 5300, 4240, 6000, 6100, 10000, 5500, 7000),
        ]
        rc, out, err = run_report(rows, header=header)
        self.assertEqual(rc, 0, err)
        near = table_row(out, "near")
        self.assertEqual(near, ["near", "3", "5300", "4240", "5300", "6000", "5000", "5100", "10000", "2.00", "1.96",
                                "5000", "1.06"])
        self.assertIn("the same allreduce with no library around it takes 5300 µs with a FIFO's copies and 6000 "
                      "with the fewest copies: the better of them above the target", out)

    def test_only_one_phase(self):
        rc, out, err = run_report([(100, 100, 4000, 3200, 5000, 5000, 11000)])
        self.assertEqual(rc, 0, err)
        self.assertIsNotNone(table_row(out, "near"))
        self.assertIsNone(table_row(out, "far"))
        self.assertIn("takes 4000 µs (3200 from buffers that stay in cache): within the 5500 µs", out)

    def test_no_usable_round(self):
        rc, out, err = run_report([(100, 900, 1, 0, 1, 1, 1), ("-", 100, 1, 0, 1, 1, 1)])
        self.assertEqual(rc, 0, err)
        self.assertIn("no round had both probes in one phase", out)

    def test_not_a_rounds_file(self):
        rc, out, err = run_report([], header="case\top\trunner")
        self.assertEqual(rc, 2)
        self.assertIn("not a net_phase_floor rounds file", err)

    def test_missing_file(self):
        p = subprocess.run([sys.executable, REPORT, "/nonexistent/rounds.tsv"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("net_phase_floor_report:", p.stderr)

    def test_usage(self):
        p = subprocess.run([sys.executable, REPORT], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("ROUNDS.tsv", p.stderr)


if __name__ == "__main__":
    unittest.main()
