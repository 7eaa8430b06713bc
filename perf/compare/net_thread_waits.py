#!/usr/bin/env python3
"""net_thread_waits.py - where each thread of a 2-process NET allreduce spends a window of its run.

Starts `ccrun -n 2 --bind core all_reduce_perf` over loopback (P2P and SHM off) with the given
COLLCOMM_NET, lets it reach its timed loop, and reads every thread's /proc schedstat (time on a
CPU, time runnable but waiting for one) and status (voluntary and involuntary switches) at the start
and end of a window inside that loop. Off-CPU time = window - on CPU - runnable: the thread slept or
blocked. Threads are named by their role: the rank (the process's main thread), the proxy (the
thread whose name is the proxy's, else the busiest other thread), and any other thread by its comm.

    python3 perf/compare/net_thread_waits.py --net ofi --size 1M --iters 8000
    python3 perf/compare/net_thread_waits.py --net socket --size 1M --iters 8000 --env COLLCOMM_SPIN_COUNT=2000

Prints one table row per thread (ms in the window, switches per operation) and the operations the
window held (from all_reduce_perf's reported time per operation). Not part of CI (docs/net.md).
"""
import argparse
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def to_bytes(s):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", s)
    if not m:
        raise SystemExit(f"bad size {s}")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def read_threads(pid):
    """{tid: (comm, on_ns, runnable_ns, voluntary, involuntary)} for one process, skipping threads gone."""
    out = {}
    base = f"/proc/{pid}/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat") as f:
                on, rq, _ = (int(x) for x in f.read().split())
            with open(f"{base}/{tid}/comm") as f:
                comm = f.read().strip()
            vol = inv = 0
            with open(f"{base}/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        inv = int(line.split()[1])
        except OSError:
            continue
        out[int(tid)] = (comm, on, rq, vol, inv)
    return out


def rank_pids(ccrun_pid, program):
    try:
        out = subprocess.run(["pgrep", "-P", str(ccrun_pid)], capture_output=True, text=True).stdout.split()
    except OSError:
        return []
    pids = []
    for p in out:
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() == program[:15]:
                    pids.append(int(p))
        except OSError:
            pass
    return sorted(pids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", default="ofi")
    ap.add_argument("--size", default="1M")
    ap.add_argument("--iters", type=int, default=8000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--start", type=float, default=1.0, help="seconds after the ranks appear")
    ap.add_argument("--window", type=float, default=1.0, help="seconds")
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the ranks")
    a = ap.parse_args()
    size = to_bytes(a.size)
    env = dict(os.environ, COLLCOMM_P2P_DISABLE="1", COLLCOMM_SHM_DISABLE="1", COLLCOMM_SOCKET_IFNAME="lo",
               COLLCOMM_NET=a.net)
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    prog = os.path.join(a.build, "perf", "all_reduce_perf")
    cmd = [os.path.join(a.build, "tools", "ccrun", "ccrun"), "-n", "2", "--bind", "core", "--timeout", "120", prog,
           "-b", str(size), "-e", str(size), "-a", "3", "-n", str(a.iters), "-w", str(a.warmup)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pids = []
    deadline = time.monotonic() + 20
    while len(pids) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
        pids = rank_pids(proc.pid, "all_reduce_perf")
    if len(pids) < 2:
        proc.kill()
        raise SystemExit("the ranks did not start")
    time.sleep(a.start)
    t0 = time.monotonic_ns()
    before = {p: read_threads(p) for p in pids}
    time.sleep(a.window)
    after = {p: read_threads(p) for p in pids}
    t1 = time.monotonic_ns()
    out, _ = proc.communicate(timeout=300)
    if proc.returncode != 0:
        sys.stdout.write(out)
        raise SystemExit(f"the run failed ({proc.returncode})")
    us = None
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 7 and f[0] == "[0]" and f[1] == str(size):
            us = float(f[6])
    window_ms = (t1 - t0) / 1e6
    ops = window_ms * 1000 / us if us else float("nan")
    print(f"COLLCOMM_NET={a.net} size={size} {' '.join(a.env)}: {us} us per op; window {window_ms:.0f} ms "
          f"(~{ops:.0f} ops); load {os.getloadavg()[0]:.2f}")
    print("| rank | thread | on CPU ms | runnable ms | off CPU ms | vol sw/op | invol sw/op |")
    print("|---|---|---|---|---|---|---|")
    for r, p in enumerate(pids):
        rows = []
        for tid, (comm, on, rq, vol, inv) in after[p].items():
            if tid not in before[p]:
                continue
            _, on0, rq0, vol0, inv0 = before[p][tid]
            d_on, d_rq = (on - on0) / 1e6, (rq - rq0) / 1e6
            rows.append((tid, comm, d_on, d_rq, window_ms - d_on - d_rq, (vol - vol0) / ops, (inv - inv0) / ops))
        others = sorted((x for x in rows if x[0] != p), key=lambda x: -x[2])
        for i, (tid, comm, d_on, d_rq, off, vol, inv) in enumerate(sorted(rows, key=lambda x: (x[0] != p, -x[2]))):
            role = "rank" if tid == p else ("proxy?" if others and tid == others[0][0] else comm)
            if d_on < 0.05 and vol < 0.001 and role not in ("rank", "proxy?"):
                continue
            print(f"| {r} | {role} ({comm}) | {d_on:.0f} | {d_rq:.0f} | {off:.0f} | {vol:.2f} | {inv:.2f} |")


if __name__ == "__main__":
    main()
