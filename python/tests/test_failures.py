"""A rank killed mid-training: the others raise within the timeout, and the message names the rank."""
import multiprocessing
import os
import tempfile
import time
from datetime import timedelta

TIMEOUT_S = 10
VICTIM = 2


def _rank(rank, world, store_path, out_dir):
    import torch
    import torch.distributed as dist

    import collcomm_torch  # noqa: F401

    store = dist.FileStore(store_path, world)
    dist.init_process_group("collcomm", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=TIMEOUT_S))
    grad = torch.ones(1 << 16)
    start = None
    message = "no error"
    try:
        for step in range(1000):
            if rank == VICTIM and step == 5:
                os.kill(os.getpid(), 9)  # killed mid-training, as by the OOM killer
            start = time.monotonic()
            dist.all_reduce(grad)
            grad.fill_(1.0)
    except Exception as e:  # noqa: BLE001  (the point is to see what surfaces)
        message = f"{type(e).__name__}: {e}"
    elapsed = time.monotonic() - start
    with open(os.path.join(out_dir, f"rank{rank}"), "w") as f:
        f.write(f"{elapsed}\n{message}")
    dist.destroy_process_group()


def _run_with_a_victim(target, world, victim):
    """Runs target(rank, world, store_path, out_dir) on `world` spawned processes, of which `victim`
    kills itself; returns the processes and out_dir once all have ended (killed at a deadline)."""
    out_dir = tempfile.mkdtemp(prefix="collcomm_torch_fail_")
    store_path = os.path.join(out_dir, "store")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=(r, world, store_path, out_dir)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 120
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, "survivors still running long after the timeout (a hang)"
    assert procs[victim].exitcode == -9
    return procs, out_dir


def test_killed_rank_is_named():
    world = 3
    procs, out_dir = _run_with_a_victim(_rank, world, VICTIM)
    for r in range(world):
        if r == VICTIM:
            continue
        with open(os.path.join(out_dir, f"rank{r}")) as f:
            elapsed, message = f.read().split("\n", 1)
        assert message != "no error", f"rank {r} finished training although rank {VICTIM} was killed"
        assert "DistBackendError" in message or "RuntimeError" in message, message
        assert f"rank {VICTIM}" in message, f"rank {r}'s error does not name rank {VICTIM}: {message}"
        print(f"rank {r} after {float(elapsed):.2f} s: {message}")
        assert float(elapsed) < TIMEOUT_S + 5, f"rank {r} raised after {elapsed} s (timeout {TIMEOUT_S} s)"


def _shrink_rank(rank, world, store_path, out_dir):
    import torch
    import torch.distributed as dist

    import collcomm_torch  # noqa: F401

    c10d = dist.distributed_c10d
    store = dist.FileStore(store_path, world)
    dist.init_process_group("collcomm", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=TIMEOUT_S))
    grad = torch.ones(1 << 16)
    dist.all_reduce(grad)
    if rank == SHRINK_VICTIM:
        os.kill(os.getpid(), 9)
    try:
        dist.all_reduce(grad)
        failure = "no error"
    except Exception as e:  # noqa: BLE001  (the point is to see what surfaces)
        failure = f"{type(e).__name__}: {e}"
    # The survivors exclude the dead rank and go on as the new default group.
    c10d.shrink_group([SHRINK_VICTIM], shrink_flags=c10d.SHRINK_ABORT)
    t = torch.full((1001,), float(rank))
    dist.all_reduce(t)
    b = torch.full((5,), float(rank))
    dist.broadcast(b, src=dist.get_world_size() - 1)
    with open(os.path.join(out_dir, f"rank{rank}"), "w") as f:
        f.write(f"{dist.get_rank()} {dist.get_world_size()} {t[0].item()} {t[-1].item()} {b.sum().item()}\n")
        f.write(failure)
    dist.destroy_process_group()


SHRINK_VICTIM = 1


def test_survivors_shrink_past_a_killed_rank():
    world = 4
    procs, out_dir = _run_with_a_victim(_shrink_rank, world, SHRINK_VICTIM)
    survivors = [r for r in range(world) if r != SHRINK_VICTIM]
    for r in survivors:
        assert procs[r].exitcode == 0, f"survivor {r} exited with {procs[r].exitcode}"
        with open(os.path.join(out_dir, f"rank{r}")) as f:
            numbers, failure = f.read().split("\n", 1)
        assert f"rank {SHRINK_VICTIM}" in failure, f"rank {r}'s error does not name rank {SHRINK_VICTIM}: {failure}"
        new_rank, new_size, first, last, bsum = numbers.split()
        assert (int(new_rank), int(new_size)) == (survivors.index(r), len(survivors))
        assert float(first) == float(last) == float(sum(survivors))
        assert float(bsum) == 5.0 * survivors[-1]


def _abort_body(rank, world, gloo):
    import pytest
    import torch
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()
    if rank == 1:
        store.wait(["collcomm_abort_done"])  # never joins the all_reduce rank 0 is stuck in
        return
    work = dist.all_reduce(torch.ones(8), async_op=True)
    start = time.monotonic()
    dist.group.WORLD.abort()
    with pytest.raises(RuntimeError, match="aborted"):
        work.wait()
    assert time.monotonic() - start < 5, "abort ends the collective in flight at once, not at the timeout"
    # The communicator is revoked, not freed, until shutdown: a later call is refused, not a crash.
    with pytest.raises(RuntimeError, match="aborted"):
        dist.all_reduce(torch.ones(8))
    store.set("collcomm_abort_done", "1")


def test_abort_ends_a_stuck_collective():
    from harness import run_ranks

    run_ranks(_abort_body, 2, timeout_s=30)
