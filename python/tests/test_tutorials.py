"""The examples/ tutorials through PyTorch: collectives_tour's primitives on 11x11 pictures,
ping_pong, dp_loss's single-layer classifier loss averaged across ranks, and DistributedDataParallel
training whose parameters equal Gloo's run (same processes, same data)."""
import math

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from crafted import assert_same
from harness import run_ranks

SIDE = 11


def painted(r):
    """Rank r's picture (collectives_tour): a disk on even ranks, a square on odd ones, of value r+1."""
    shift = (3 * r) % 5
    y, x = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
    if r % 2 == 0:
        inside = (x - (3 + shift)) ** 2 + (y - (3 + shift)) ** 2 <= 9
    else:
        inside = (x >= 2 + shift) & (x <= 6 + shift) & (y >= 5 - shift // 2) & (y <= 9 - shift // 2)
    return inside.to(torch.int32) * (r + 1)


def tour(rank, world, gloo):
    for group in (None, gloo):
        name = "gloo" if group else "collcomm"
        g = painted(rank)
        dist.all_reduce(g, group=group)
        assert_same(g, sum(painted(r) for r in range(world)), f"all_reduce SUM ({name})")
        g = painted(rank)
        dist.all_reduce(g, op=dist.ReduceOp.MAX, group=group)
        assert_same(g, torch.stack([painted(r) for r in range(world)]).amax(0), f"all_reduce MAX ({name})")
        g = painted(rank)
        dist.reduce(g, dst=0, group=group)
        if rank == 0:
            assert_same(g, sum(painted(r) for r in range(world)), f"reduce ({name})")
        g = painted(rank)
        dist.broadcast(g, src=0, group=group)
        assert_same(g, painted(0), f"broadcast ({name})")
        outs = [torch.empty(SIDE, SIDE, dtype=torch.int32) for _ in range(world)]
        dist.all_gather(outs, painted(rank), group=group)
        for r in range(world):
            assert_same(outs[r], painted(r), f"all_gather ({name})")
        blocks = [painted(rank) * (j + 1) for j in range(world)]
        out = torch.empty(SIDE, SIDE, dtype=torch.int32)
        dist.reduce_scatter(out, blocks, group=group)
        assert_same(out, sum(painted(r) for r in range(world)) * (rank + 1), f"reduce_scatter ({name})")
        outs = [torch.empty(SIDE, SIDE, dtype=torch.int32) for _ in range(world)] if rank == 0 else None
        dist.gather(painted(rank), outs, dst=0, group=group)
        if rank == 0:
            for r in range(world):
                assert_same(outs[r], painted(r), f"gather ({name})")
        out = torch.empty(SIDE, SIDE, dtype=torch.int32)
        dist.scatter(out, [painted(r) * 10 for r in range(world)] if rank == 0 else None, src=0, group=group)
        assert_same(out, painted(rank) * 10, f"scatter ({name})")
    # ping_pong: 2048 float16 values of a sine wave, 0 -> 1 -> 0.
    wave = torch.sin(torch.arange(2048, dtype=torch.float32) * 0.01).half()
    if rank == 0:
        dist.send(wave, 1)
        back = torch.empty_like(wave)
        dist.recv(back, 1)
        assert_same(back, wave, "ping_pong round trip")
    elif rank == 1:
        got = torch.empty_like(wave)
        dist.recv(got, 0)
        assert_same(got, wave, "ping_pong received")
        dist.send(got, 0)


# dp_loss / dp_training's model and data (examples/tiny_model.h): a linear layer 8 -> 4 with
# softmax cross-entropy on 96 deterministic samples.
FEATURES, CLASSES, SAMPLES = 8, 4, 96


def dataset():
    i = torch.arange(SAMPLES, dtype=torch.float32)
    y = (torch.arange(SAMPLES) * 7) % CLASSES
    d = torch.arange(FEATURES, dtype=torch.float32)
    x = torch.sin(0.7 * i[:, None] + 1.3 * d[None, :]) + (torch.arange(FEATURES)[None, :] % CLASSES == y[:, None]).float()
    return x, y


def init_params():
    p = 0.1 * torch.sin(1.0 + torch.arange(CLASSES * FEATURES + CLASSES, dtype=torch.float32))
    return p[: CLASSES * FEATURES].view(CLASSES, FEATURES).clone(), p[CLASSES * FEATURES:].clone()


def dp_loss(rank, world, gloo):
    x, y = dataset()
    w, b = init_params() if rank == 0 else (torch.zeros(CLASSES, FEATURES), torch.zeros(CLASSES))
    results = {}
    for group in (None, gloo):
        ww, bb = w.clone(), b.clone()
        dist.broadcast(ww, src=0, group=group)
        dist.broadcast(bb, src=0, group=group)
        shard = slice(rank * SAMPLES // world, (rank + 1) * SAMPLES // world)
        loss = F.cross_entropy(x[shard] @ ww.T + bb, y[shard], reduction="sum").reshape(1)
        dist.all_reduce(loss, group=group)
        results[group] = loss / SAMPLES
    full = F.cross_entropy(x @ init_params()[0].T + init_params()[1], y)
    torch.testing.assert_close(results[None][0], full, rtol=1e-5, atol=1e-6)
    if world == 2:  # a sum of two is the same in any order: collcomm and Gloo agree bit for bit
        assert_same(results[None], results[gloo], "dp_loss collcomm vs gloo")


def ddp_training(rank, world, gloo, steps=20):
    from torch.nn.parallel import DistributedDataParallel as DDP

    x, y = dataset()
    shard = slice(rank * SAMPLES // world, (rank + 1) * SAMPLES // world)
    finals = []
    for group in (None, gloo):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, CLASSES))
        ddp = DDP(model, process_group=group)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        first = None
        for _ in range(steps):
            opt.zero_grad()
            loss = F.cross_entropy(ddp(x[shard]), y[shard])
            loss.backward()
            opt.step()
            first = first if first is not None else loss.item()
        assert loss.item() < first, "training lowers the loss"
        finals.append([p.detach().clone() for p in model.parameters()])
    for mine, theirs in zip(*finals):
        assert_same(mine, theirs, "DDP parameters, collcomm vs gloo")
    # Every rank holds the same parameters.
    for p in finals[0]:
        q = p.clone()
        dist.broadcast(q, src=0)
        assert_same(p, q, "DDP parameters across ranks")


@pytest.mark.parametrize("world", [2, 3])
def test_collectives_tour(world):
    run_ranks(tour, world)


@pytest.mark.parametrize("world", [2, 3])
def test_dp_loss(world):
    run_ranks(dp_loss, world)


def test_ddp_matches_gloo():
    run_ranks(ddp_training, 2)
