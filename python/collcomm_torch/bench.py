"""Benchmark: dist.all_reduce of float32 CPU tensors through collcomm and through Gloo in the same
run, and one DistributedDataParallel step of a small MLP.

    python -m collcomm_torch.bench [--sizes 8,1024,...] [--max-bytes N] [--configs pinned2,shared4]

Configurations: "pinned2" is 2 processes, each pinned to its own core; "shared4" is 4 processes on
2 cores (2 per core); "free2" is 2 processes left to the scheduler. Prints a markdown table: time per all_reduce (µs, slowest rank) and bus
bandwidth (2(n-1)/n x bytes / time), for both backends, and their ratio.
"""
import argparse
import os
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# name: (processes, cores they are pinned to; 0: not pinned)
CONFIGS = {"pinned2": (2, 2), "shared4": (4, 2), "free2": (2, 0)}
DEFAULT_SIZES = [8, 64, 512, 4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]


def _iters(nbytes):
    # Enough repetitions for ~0.2 s of work at a few GB/s, at least 5, at most 2000.
    return max(5, min(2000, int(4e8 / max(nbytes, 1 << 14))))


def _time_allreduce(t, group, iters):
    # Warm-up: connections, first-touch of buffers, the planner's first choice for the size.
    for _ in range(max(2, min(iters // 10, 100))):
        dist.all_reduce(t, group=group)
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t, group=group)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    return elapsed.item()


def _ddp_step_time(group, steps=20):
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = torch.tensor([(time.perf_counter() - start) / steps], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    return elapsed.item()


def _rank(rank, world, cores, store_path, sizes, ddp, queue):
    if cores:
        os.sched_setaffinity(0, {rank % cores})
    torch.set_num_threads(1)
    from . import register

    register()
    store = dist.FileStore(store_path, world)
    dist.init_process_group("collcomm", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=300))
    gloo = dist.new_group(backend="gloo")
    rows = []
    for nbytes in sizes:
        t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        iters = _iters(nbytes)
        cc = _time_allreduce(t, None, iters)
        gl = _time_allreduce(t, gloo, iters)
        rows.append((nbytes, cc, gl))
    steps = (_ddp_step_time(None), _ddp_step_time(gloo)) if ddp else None
    if rank == 0:
        queue.put((rows, steps))
    dist.destroy_process_group()


def _fmt_bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n // size} {unit}"
    return f"{n} B"


def run(config, sizes, ddp):
    world, cores = CONFIGS[config]
    cores = min(cores, os.cpu_count() or 1) if cores else 0
    fd, path = tempfile.mkstemp(prefix="collcomm_bench_")
    os.close(fd)
    os.unlink(path)
    load_before = os.getloadavg()[0]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, world, cores, path, sizes, ddp, queue)) for r in range(world)]
    for p in procs:
        p.start()
    rows, steps = queue.get(timeout=3600)
    for p in procs:
        p.join()
    load_after = os.getloadavg()[0]
    where = f"pinned to {cores} cores" if cores else "not pinned"
    print(f"\n### {config}: {world} processes, {where}, float32 all_reduce\n")
    # Other processes on the cores change every number here (see docs/pytorch.md, "Speed").
    print(f"load average (1 min) {load_before:.2f} before, {load_after:.2f} after, on {os.cpu_count()} CPUs\n")
    print("| size | collcomm µs | Gloo µs | latency ratio | collcomm busbw GB/s | Gloo busbw GB/s | busbw ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    factor = 2 * (world - 1) / world
    for nbytes, cc, gl in rows:
        bcc, bgl = factor * nbytes / cc / 1e9, factor * nbytes / gl / 1e9
        print(f"| {_fmt_bytes(nbytes)} | {cc * 1e6:.1f} | {gl * 1e6:.1f} | {gl / cc:.1f}x | {bcc:.2f} | {bgl:.2f} | "
              f"{bgl and bcc / bgl:.1f}x |")
    if steps:
        print(f"\nDDP step (MLP 256-1024-1024-10, batch 64, {world} processes): collcomm {steps[0] * 1e3:.2f} ms, "
              f"Gloo {steps[1] * 1e3:.2f} ms ({steps[1] / steps[0]:.2f}x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", help="comma-separated byte sizes (default 8 B ... 256 MiB)")
    parser.add_argument("--max-bytes", type=int, default=None, help="leave out sizes above this")
    parser.add_argument("--configs", default="pinned2,shared4", help="comma-separated: pinned2, shared4, free2")
    parser.add_argument("--no-ddp", action="store_true", help="leave out the DDP step")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else DEFAULT_SIZES
    if args.max_bytes:
        sizes = [s for s in sizes if s <= args.max_bytes]
    for config in args.configs.split(","):
        run(config, sizes, ddp=not args.no_ddp)


if __name__ == "__main__":
    main()
