"""The collcomm backend on CUDA tensors: every op against the float64 references of crafted inputs
bit for bit, the stream semantics (wait, futures, a side stream), DDP, eager init, and a dead peer.

Skipped, saying why, where torch sees no GPU or this collcomm_torch was built without CUDA. Ranks
take GPU rank % (GPUs visible); more ranks than GPUs need CUDA's MPS on the GPU they share (collcomm
refuses ranks of several processes on one GPU without it): set COLLCOMM_TORCH_TEST_MPS=1 where an
MPS daemon runs (scripts/gpu_check.sh's torch section starts one).
"""
import os
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

import collcomm_torch
from crafted import FLOATS, INTS, assert_same, craft, reference
from harness import run_ranks

N = 37


def _why_skipped(world):
    if not torch.cuda.is_available():
        return "torch sees no CUDA GPU here"
    if not collcomm_torch._C.has_cuda():
        return "this collcomm_torch was built without CUDA"
    if world > torch.cuda.device_count() and os.environ.get("COLLCOMM_TORCH_TEST_MPS") != "1":
        return (f"{world} ranks on {torch.cuda.device_count()} GPU(s) need CUDA's MPS (set COLLCOMM_TORCH_TEST_MPS=1 "
                "where its daemon runs)")
    return None


def needs_gpus(world):
    why = _why_skipped(world)
    if why:
        pytest.skip(why)


def _cuda_entry(rank, world, store_path, body, args, timeout_s):
    """Joins the default group with collcomm on this rank's GPU, eagerly (device_id), as DDP jobs do."""
    import collcomm_torch  # noqa: F401

    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("collcomm", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s), device_id=device)
    try:
        body(rank, world, device, *args)
    finally:
        dist.destroy_process_group()


def run_cuda(body, world, *args, timeout_s=60):
    run_ranks(body, world, *args, timeout_s=timeout_s, entry=_cuda_entry)


def check_collectives(rank, world, device):
    ops = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
           "max": dist.ReduceOp.MAX}
    for dtype in FLOATS + INTS:
        for name, op in ops.items():
            t = craft(rank, N, dtype, product=name == "product").to(device)
            dist.all_reduce(t, op=op)
            assert_same(t.cpu(), reference(world, N, dtype, name), f"all_reduce {name} {dtype}")
            t = craft(rank, N, dtype, product=name == "product").to(device)
            dist.reduce(t, dst=world - 1, op=op)
            if rank == world - 1:
                assert_same(t.cpu(), reference(world, N, dtype, name), f"reduce {name} {dtype}")
            inp = torch.cat([craft(rank, N, dtype, salt=p, product=name == "product")
                         for p in range(world)]).to(device)
            out = torch.empty(N, dtype=dtype, device=device)
            dist.reduce_scatter_tensor(out, inp, op=op)
            assert_same(out.cpu(), reference(world, N, dtype, name, salt=rank), f"reduce_scatter_tensor {name} {dtype}")
        t = craft(rank, N, dtype).to(device)
        dist.broadcast(t, src=world - 1)
        assert_same(t.cpu(), craft(world - 1, N, dtype), f"broadcast {dtype}")
        out = torch.empty(world * N, dtype=dtype, device=device)
        dist.all_gather_into_tensor(out, craft(rank, N, dtype).to(device))
        assert_same(out.cpu(), torch.cat([craft(r, N, dtype) for r in range(world)]), f"all_gather_into_tensor {dtype}")
        outs = [torch.empty(N, dtype=dtype, device=device) for _ in range(world)]
        dist.all_gather(outs, craft(rank, N, dtype).to(device))
        for r, o in enumerate(outs):
            assert_same(o.cpu(), craft(r, N, dtype), f"all_gather {dtype}")
        inp = torch.cat([craft(rank, N, dtype, salt=p) for p in range(world)]).to(device)
        out = torch.empty(world * N, dtype=dtype, device=device)
        dist.all_to_all_single(out, inp)
        assert_same(out.cpu(), torch.cat([craft(p, N, dtype, salt=rank) for p in range(world)]),
                    f"all_to_all_single {dtype}")
    for dtype in FLOATS[:4]:
        t = craft(rank, N, dtype).to(device)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        assert_same(t.cpu(), (reference(world, N, torch.float64, "sum") * 2).to(dtype), f"premul_sum {dtype}")
        # A factor in device memory, written by the stream just before: the kernel reads it when it runs.
        factor = torch.zeros((), dtype=dtype, device=device)
        torch.cuda._sleep(20_000_000)  # the fill lands late: the collective must wait for it
        factor.fill_(4.0)
        t = craft(rank, N, dtype).to(device)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
        assert_same(t.cpu(), (reference(world, N, torch.float64, "sum") * 4).to(dtype), f"premul_sum tensor {dtype}")
    # Gather and scatter (point to point underneath), uneven splits, a send/recv ring.
    outs = [torch.empty(N, device=device) for _ in range(world)] if rank == 0 else None
    dist.gather(craft(rank, N, torch.float32).to(device), outs, dst=0)
    if rank == 0:
        for r in range(world):
            assert_same(outs[r].cpu(), craft(r, N, torch.float32), "gather")
    out = torch.empty(N, device=device)
    ins = [craft(p, N, torch.float32, salt=1).to(device) for p in range(world)] if rank == 0 else None
    dist.scatter(out, ins, src=0)
    assert_same(out.cpu(), craft(rank, N, torch.float32, salt=1), "scatter")
    send = [p + rank + 1 for p in range(world)]
    recv = [rank + p + 1 for p in range(world)]
    inp = torch.cat([torch.full((send[p], 3), 100 * rank + p, dtype=torch.float32) for p in range(world)]).to(device)
    out = torch.empty(sum(recv), 3, device=device)
    dist.all_to_all_single(out, inp, output_split_sizes=recv, input_split_sizes=send)
    want = torch.cat([torch.full((recv[p], 3), 100 * p + rank, dtype=torch.float32) for p in range(world)])
    assert_same(out.cpu(), want, "all_to_all_single uneven")
    if world > 1:
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        r = torch.empty(1000, device=device)
        ops = [dist.P2POp(dist.isend, torch.full((1000,), float(rank), device=device), nxt),
               dist.P2POp(dist.irecv, r, prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        assert_same(r.cpu(), torch.full((1000,), float(prv)), "batch_isend_irecv")
    # Non-contiguous, and a coalesced batch.
    base = torch.stack([craft(rank, N, torch.bfloat16, salt=i) for i in range(4)], dim=1).to(device)
    view = base[:, 1::2]
    dist.all_reduce(view)
    for j, i in enumerate((1, 3)):
        assert_same(view[:, j].cpu(), reference(world, N, torch.bfloat16, "sum", salt=i), "non-contiguous")
    assert_same(base[:, 0].cpu(), craft(rank, N, torch.bfloat16, salt=0), "untouched columns")
    with dist._coalescing_manager():
        a = craft(rank, N, torch.float32).to(device)
        b = craft(rank, N, torch.float32, salt=1).to(device)
        dist.all_reduce(a)
        dist.all_reduce(b)
    assert_same(a.cpu(), reference(world, N, torch.float32, "sum"), "coalesced a")
    assert_same(b.cpu(), reference(world, N, torch.float32, "sum", salt=1), "coalesced b")
    # CPU tensors keep working on the same group (the host communicator).
    t = craft(rank, N, torch.float32)
    dist.all_reduce(t)
    assert_same(t, reference(world, N, torch.float32, "sum"), "cpu tensor on a CUDA group")


def check_streams(rank, world, device):
    # The operation starts after what the caller's stream did, and the caller's stream waits for it
    # after wait(); the host never blocked: work queued on a side stream behind a long sleep.
    side = torch.cuda.Stream(device)
    with torch.cuda.stream(side):
        t = torch.zeros(1 << 20, device=device)
        torch.cuda._sleep(50_000_000)  # about 25-50 ms of GPU time before the fill
        t.fill_(float(rank + 1))
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        doubled = t * 2
    side.synchronize()
    assert doubled[0].item() == 2.0 * sum(r + 1 for r in range(world))
    assert work.is_completed() or _completes(work), "work completes once its stream ran it"
    # Futures: a callback chained on the result sees it (DDP's comm hooks rely on this).
    t = torch.full((64,), float(rank), device=device)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] + 1)
    assert fut.wait()[0].item() == float(sum(range(world)) + 1)


def _completes(work, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if work.is_completed():
            return True
        time.sleep(0.01)
    return False


def check_ddp(rank, world, device):
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    for _ in range(5):
        x = torch.randn(16, 32, generator=gen).to(device)
        y = torch.randn(16, 4, generator=gen).to(device)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(everyone, flat)
    for r in range(world):
        assert torch.equal(everyone[r].cpu(), flat.cpu()), f"rank {r}'s parameters differ from rank {rank}'s"


def check_dead_peer(rank, world, device):
    t = torch.ones(1024, device=device)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    if rank == world - 1:
        os._exit(0)  # leaves without a word, mid-job
    with pytest.raises(RuntimeError, match=f"rank {world - 1}"):
        for _ in range(100):
            work = dist.all_reduce(t, async_op=True)
            work.wait(timeout=timedelta(seconds=30))
    os._exit(0)  # the group cannot be destroyed in step with a dead peer


@pytest.mark.parametrize("world", [1, 2])
def test_collectives(world):
    needs_gpus(world)
    run_cuda(check_collectives, world)


@pytest.mark.parametrize("world", [2])
def test_streams_and_futures(world):
    needs_gpus(world)
    run_cuda(check_streams, world)


@pytest.mark.parametrize("world", [2])
def test_ddp(world):
    needs_gpus(world)
    run_cuda(check_ddp, world)


def test_dead_peer_is_named():
    needs_gpus(2)
    run_cuda(check_dead_peer, 2, timeout_s=20)


if __name__ == "__main__":  # without pytest: python3 test_cuda.py
    import sys
    why = _why_skipped(2)
    print(f"skipped: {why}" if why else "running", flush=True)
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
