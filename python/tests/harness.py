"""Runs a test body on N ranks as spawned processes, with a deadline.

Each rank joins the default group with backend "collcomm" through a FileStore and also gets a Gloo
group over the same ranks, so one run can compare the two bit for bit. A rank that fails makes the
run fail with its traceback; a run that passes its deadline is killed and fails, never hangs.
"""
import os
import tempfile
import time
from datetime import timedelta

import torch.distributed as dist
import torch.multiprocessing as mp

DEADLINE_S = float(os.environ.get("COLLCOMM_TORCH_TEST_DEADLINE", "240"))


def _entry(rank, world, store_path, body, args, timeout_s):
    import collcomm_torch  # noqa: F401  (registers the backend; the entry point would too)

    store = dist.FileStore(store_path, world)
    dist.init_process_group("collcomm", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))
    gloo = dist.new_group(backend="gloo")
    try:
        body(rank, world, gloo, *args)
    finally:
        dist.destroy_process_group()


def run_ranks(body, world, *args, timeout_s=60, deadline_s=DEADLINE_S, entry=None):
    """Runs body(rank, world, gloo_group, *args) on `world` processes; raises if any rank fails."""
    fd, path = tempfile.mkstemp(prefix="collcomm_torch_store_")
    os.close(fd)
    os.unlink(path)
    ctx = mp.start_processes(entry or _entry, args=(world, path, body, args, timeout_s), nprocs=world,
                             join=False, start_method="spawn")
    end = time.monotonic() + deadline_s
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > end:
                raise TimeoutError(f"ranks still running after {deadline_s} s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
        if os.path.exists(path):
            os.unlink(path)
