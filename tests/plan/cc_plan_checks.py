"""What the cc-plan tests share: the fixtures' paths, one cc-plan run, and checks that collect every
failure before reporting them all (so one run shows everything that is wrong, not the first)."""
import os
import subprocess


def topology(source_dir, name):
    return os.path.join(source_dir, "tests", "fixtures", "topologies", name)


def run_cc_plan(cc_plan, *args):
    return subprocess.run([cc_plan, *args], capture_output=True, text=True, timeout=60)


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, cond, what):
        if not cond:
            self.failures.append(what)

    def report(self):
        """Prints every failure and a summary; returns the exit status."""
        for f in self.failures:
            print("FAIL " + f)
        print("%d checks failed" % len(self.failures) if self.failures else "ok")
        return 1 if self.failures else 0
