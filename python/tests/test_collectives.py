"""torch.distributed semantics of the collcomm backend: every op, every dtype, checked against
float64 references of crafted inputs and against Gloo (same inputs, same run) bit for bit."""
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from crafted import ALL_DTYPES, FLOATS, GLOO_DTYPES, assert_same, craft, reference
from harness import run_ranks

N = 37
OPS = {"sum": dist.ReduceOp.SUM, "product": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX}


def both(fn, gloo, dtype):
    """fn(group) with collcomm (the default group); with Gloo too where Gloo has the dtype: they must agree."""
    got = fn(None)
    if dtype in GLOO_DTYPES:
        theirs = fn(gloo)
        for g, t in zip(got, theirs):
            assert_same(g, t, f"collcomm vs gloo {fn.__name__} {dtype}")
    return got


def check_reductions(rank, world, gloo):
    for dtype in ALL_DTYPES:
        for name, op in OPS.items():
            def all_reduce(group, name=name, op=op):
                t = craft(rank, N, dtype, product=name == "product")
                dist.all_reduce(t, op=op, group=group)
                return [t]
            (got,) = both(all_reduce, gloo, dtype)
            assert_same(got, reference(world, N, dtype, name), f"all_reduce {name} {dtype}")

            def reduce(group, name=name, op=op):
                t = craft(rank, N, dtype, product=name == "product")
                dist.reduce(t, dst=world - 1, op=op, group=group)
                return [t] if rank == world - 1 else []  # only the root's result is defined
            for got in both(reduce, gloo, dtype):
                assert_same(got, reference(world, N, dtype, name), f"reduce {name} {dtype}")

            def reduce_scatter_tensor(group, name=name, op=op):
                inp = torch.cat([craft(rank, N, dtype, salt=p, product=name == "product") for p in range(world)])
                out = torch.empty(N, dtype=dtype)
                dist.reduce_scatter_tensor(out, inp, op=op, group=group)
                return [out]
            (got,) = both(reduce_scatter_tensor, gloo, dtype)
            assert_same(got, reference(world, N, dtype, name, salt=rank), f"reduce_scatter_tensor {name} {dtype}")

            def reduce_scatter(group, name=name, op=op):
                ins = [craft(rank, N, dtype, salt=p, product=name == "product") for p in range(world)]
                out = torch.empty(N, dtype=dtype)
                dist.reduce_scatter(out, ins, op=op, group=group)
                return [out]
            (got,) = both(reduce_scatter, gloo, dtype)
            assert_same(got, reference(world, N, dtype, name, salt=rank), f"reduce_scatter {name} {dtype}")

    for dtype in FLOATS[:4]:
        t = craft(rank, N, dtype)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        want = reference(world, N, torch.float64, "avg")
        torch.testing.assert_close(t.double(), want, rtol=1e-2, atol=1e-2)
        t = craft(rank, N, dtype)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        assert_same(t, (reference(world, N, torch.float64, "sum") * 2).to(dtype), f"premul_sum {dtype}")
    # Uneven reduce_scatter (Gloo has none): part p has p+1 elements, rank r gets the sum of parts r.
    ins = [craft(rank, p + 1, torch.bfloat16, salt=p) for p in range(world)]
    out = torch.empty(rank + 1, dtype=torch.bfloat16)
    dist.reduce_scatter(out, ins)
    assert_same(out, reference(world, rank + 1, torch.bfloat16, "sum", salt=rank), "uneven reduce_scatter")
    # bool: SUM is OR, PRODUCT is AND (torch's definition).
    b = torch.tensor([rank == 0, False, True])
    dist.all_reduce(b)
    assert b.tolist() == [True, False, True]


def check_data_movement(rank, world, gloo):
    for dtype in ALL_DTYPES + [torch.bool, torch.complex64, torch.int16]:
        def broadcast(group):
            t = craft(rank, N, dtype)
            dist.broadcast(t, src=world - 1, group=group)
            return [t]
        (got,) = both(broadcast, gloo, dtype)
        assert_same(got, craft(world - 1, N, dtype), f"broadcast {dtype}")

        def all_gather(group):
            outs = [torch.empty(N, dtype=dtype) for _ in range(world)]
            dist.all_gather(outs, craft(rank, N, dtype), group=group)
            return outs
        for r, o in enumerate(both(all_gather, gloo, dtype)):
            assert_same(o, craft(r, N, dtype), f"all_gather {dtype}")

        def all_gather_into_tensor(group):
            out = torch.empty(world * N, dtype=dtype)
            dist.all_gather_into_tensor(out, craft(rank, N, dtype), group=group)
            return [out]
        (got,) = both(all_gather_into_tensor, gloo, dtype)
        assert_same(got, torch.cat([craft(r, N, dtype) for r in range(world)]), f"all_gather_into_tensor {dtype}")

        def gather(group):
            outs = [torch.empty(N, dtype=dtype) for _ in range(world)] if rank == 0 else None
            dist.gather(craft(rank, N, dtype), outs, dst=0, group=group)
            return outs or []
        for r, o in enumerate(both(gather, gloo, dtype)):
            assert_same(o, craft(r, N, dtype), f"gather {dtype}")

        def scatter(group):
            out = torch.empty(N, dtype=dtype)
            ins = [craft(p, N, dtype, salt=1) for p in range(world)] if rank == 0 else None
            dist.scatter(out, ins, src=0, group=group)
            return [out]
        (got,) = both(scatter, gloo, dtype)
        assert_same(got, craft(rank, N, dtype, salt=1), f"scatter {dtype}")

        def all_to_all_single(group):
            inp = torch.cat([craft(rank, N, dtype, salt=p) for p in range(world)])
            out = torch.empty(world * N, dtype=dtype)
            dist.all_to_all_single(out, inp, group=group)
            return [out]
        (got,) = both(all_to_all_single, gloo, dtype)
        assert_same(got, torch.cat([craft(p, N, dtype, salt=rank) for p in range(world)]), f"all_to_all_single {dtype}")

    # Uneven splits: rank r sends p+r+1 rows of 3 to rank p (and nothing to itself when p == r and r is even).
    def rows(src, dst):
        return 0 if (src == dst and src % 2 == 0) else dst + src + 1
    send = [rows(rank, p) for p in range(world)]
    recv = [rows(p, rank) for p in range(world)]
    inp = torch.cat([torch.full((send[p], 3), 100 * rank + p, dtype=torch.float32) for p in range(world)])
    for group in (None, gloo):
        out = torch.empty(sum(recv), 3)
        dist.all_to_all_single(out, inp, output_split_sizes=recv, input_split_sizes=send, group=group)
        want = torch.cat([torch.full((recv[p], 3), 100 * p + rank, dtype=torch.float32) for p in range(world)])
        assert_same(out, want, f"all_to_all_single uneven ({'gloo' if group else 'collcomm'})")
    # all_to_all with lists of different sizes (Gloo has no all_to_all of lists).
    ins = [torch.full((rank + p + 1,), float(10 * rank + p)) for p in range(world)]
    outs = [torch.empty(p + rank + 1) for p in range(world)]
    dist.all_to_all(outs, ins)
    for p in range(world):
        assert_same(outs[p], torch.full((p + rank + 1,), float(10 * p + rank)), "all_to_all lists")
    # Uneven all_gather (each rank's output says how much that rank sends).
    outs = [torch.empty(r + 1, dtype=torch.bfloat16) for r in range(world)]
    dist.all_gather(outs, torch.full((rank + 1,), float(rank), dtype=torch.bfloat16))
    for r in range(world):
        assert_same(outs[r], torch.full((r + 1,), float(r), dtype=torch.bfloat16), "uneven all_gather")
    # Uneven gather.
    outs = [torch.empty(r + 2, dtype=torch.int64) for r in range(world)] if rank == 0 else None
    dist.gather(torch.full((rank + 2,), rank, dtype=torch.int64), outs, dst=0)
    if rank == 0:
        for r in range(world):
            assert_same(outs[r], torch.full((r + 2,), r, dtype=torch.int64), "uneven gather")


def check_p2p_and_async(rank, world, gloo):
    # Ring of send/recv, ping-pong style (even ranks send first).
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    t = torch.full((1000,), float(rank))
    r = torch.empty(1000)
    if rank % 2 == 0:
        dist.send(t, nxt)
        dist.recv(r, prv)
    else:
        dist.recv(r, prv)
        dist.send(t, nxt)
    assert_same(r, torch.full((1000,), float(prv)), "send/recv ring")
    # batch_isend_irecv: both directions at once, coalesced into one group.
    ops = [dist.P2POp(dist.isend, t, nxt), dist.P2POp(dist.irecv, r, prv)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert_same(r, torch.full((1000,), float(prv)), "batch_isend_irecv")
    # Async work: ordered per group, futures carry the outputs.
    ts = [craft(rank, N, torch.float32, salt=i) for i in range(8)]
    works = [dist.all_reduce(x, async_op=True) for x in ts]
    futs = [w.get_future() for w in works]
    works[-1].wait()
    for i, (x, w, f) in enumerate(zip(ts, works, futs)):
        assert w.is_completed(), "earlier work completes before a later one"
        assert_same(x, reference(world, N, torch.float32, "sum", salt=i), "async all_reduce")
        assert_same(f.wait()[0], x, "future value")
    assert works[0].wait(timeout=timedelta(seconds=5))
    # wait(timeout) gives up on a collective a peer has not joined yet (rank 1 joins only when
    # told through the store), and the same Work completes once it has.
    store = dist.distributed_c10d._get_default_store()
    t = torch.ones(4)
    if rank == 1:
        store.wait(["collcomm_test_go"])
        dist.all_reduce(t)
    else:
        w = dist.all_reduce(t, async_op=True)
        if rank == 0:
            with pytest.raises(RuntimeError, match="timed out"):
                w.wait(timeout=timedelta(milliseconds=200))
            assert not w.is_completed()
            store.set("collcomm_test_go", "1")
        w.wait()
    assert t.tolist() == [float(world)] * 4
    dist.barrier()
    # Non-contiguous tensors, in and out.
    base = torch.stack([craft(rank, N, torch.bfloat16, salt=i) for i in range(4)], dim=1)  # (N, 4)
    view = base[:, 1::2]
    dist.all_reduce(view)
    for j, i in enumerate((1, 3)):
        assert_same(view[:, j].contiguous(), reference(world, N, torch.bfloat16, "sum", salt=i), "non-contiguous")
    assert_same(base[:, 0].contiguous(), craft(rank, N, torch.bfloat16, salt=0), "untouched columns")
    out = torch.empty(N, world * 2)[:, ::2]
    outs = [out[:, p] for p in range(world)]
    dist.all_gather(outs, craft(rank, N, torch.float32))
    for p in range(world):
        assert_same(outs[p].contiguous(), craft(p, N, torch.float32), "all_gather into strided views")
    # Coalesced fast paths (what FSDP uses).
    pg = dist.group.WORLD
    with dist._coalescing_manager(group=pg):
        a = craft(rank, N, torch.float32)
        b = craft(rank, N, torch.float32, salt=1)
        dist.all_reduce(a)
        dist.all_reduce(b)
    assert_same(a, reference(world, N, torch.float32, "sum"), "coalesced all_reduce a")
    assert_same(b, reference(world, N, torch.float32, "sum", salt=1), "coalesced all_reduce b")
    outs = [torch.empty(world * N) for _ in range(2)]
    with dist._coalescing_manager(group=pg):
        for i, o in enumerate(outs):
            dist.all_gather_into_tensor(o, craft(rank, N, torch.float32, salt=i))
    for i, o in enumerate(outs):
        assert_same(o, torch.cat([craft(p, N, torch.float32, salt=i) for p in range(world)]), "coalesced all_gather")
    outs = [torch.empty(N) for _ in range(2)]
    with dist._coalescing_manager(group=pg):
        for i, o in enumerate(outs):
            dist.reduce_scatter_tensor(o, torch.cat([craft(rank, N, torch.float32, salt=i + p) for p in range(world)]))
    for i, o in enumerate(outs):
        assert_same(o, reference(world, N, torch.float32, "sum", salt=i + rank), "coalesced reduce_scatter")
    # The list forms, whose inputs the backend lays end to end in a buffer of its own: in a batch
    # the calls run at its end, so each buffer must outlive the operation that made it (large
    # enough that a freed one goes back to the system: reading it then faults).
    big = 1 << 16
    outs = [torch.empty(big) for _ in range(3)]
    with dist._coalescing_manager(group=pg, device=torch.device("cpu")):  # the backend's coalescing
        for i, o in enumerate(outs):
            dist.reduce_scatter(o, [craft(rank, big, torch.float32, salt=10 * i + p) for p in range(world)])
    for i, o in enumerate(outs):
        assert_same(o, reference(world, big, torch.float32, "sum", salt=10 * i + rank), "coalesced reduce_scatter list")
    # A subgroup through new_group: ranks 1.. only.
    sub = dist.new_group(ranks=list(range(1, world)), backend="collcomm")
    if rank >= 1:
        t = torch.ones(5)
        dist.all_reduce(t, group=sub)
        assert t.tolist() == [float(world - 1)] * 5
    # What collcomm cannot do is a RuntimeError, not a wrong answer.
    with pytest.raises(RuntimeError, match="bitwise"):
        dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="cannot reduce"):
        dist.all_reduce(torch.ones(3, dtype=torch.int16))
    dist.barrier()


@pytest.mark.parametrize("world", [2, 3])
def test_reductions(world):
    run_ranks(check_reductions, world)


@pytest.mark.parametrize("world", [2, 3])
def test_data_movement(world):
    run_ranks(check_data_movement, world)


@pytest.mark.parametrize("world", [2, 4])
def test_p2p_async_noncontiguous(world):
    run_ranks(check_p2p_and_async, world)


def check_split_group(rank, world, gloo):
    # ProcessGroup.split_group reaches the backend's split (ccCommSplit). Each rank names the
    # subgroup it joins: even ranks together, odd ranks together, except the last rank of an even
    # world, which names the even subgroup (without itself) and so joins none.
    parent = dist.distributed_c10d._get_default_group()
    outsider = world - 1 if world % 2 == 0 else None
    evens = [r for r in range(0, world, 2)]
    odds = [r for r in range(1, world, 2) if r != outsider]
    mine = evens if rank % 2 == 0 or rank == outsider else odds
    sub = parent.split_group(mine)
    if rank == outsider:
        assert sub is None
    else:
        assert sub is not None
        assert (sub.rank(), sub.size()) == (mine.index(rank), len(mine))
        t = torch.full((7,), float(rank + 1))
        dist.all_reduce(t, group=sub)
        assert t.tolist() == [float(sum(r + 1 for r in mine))] * 7
        b = torch.full((3,), float(rank))
        dist.broadcast(b, group=sub, group_src=len(mine) - 1)
        assert b.tolist() == [float(mine[-1])] * 3
    # The parent goes on working after the split.
    t = torch.ones(4)
    dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 4


@pytest.mark.parametrize("world", [3, 4])
def test_split_group(world):
    run_ranks(check_split_group, world)


def check_shrink_group(rank, world, gloo):
    # torch's shrink_group reaches the backend's shrink (ccCommShrink): rank 1 is excluded and takes
    # no part; the others get a new default group, the remaining ranks renumbered in their order.
    excluded = 1
    if rank == excluded:
        return
    c10d = dist.distributed_c10d
    remaining = [r for r in range(world) if r != excluded]
    shrunk = c10d.shrink_group([excluded])
    assert shrunk is c10d._get_default_group()
    assert (shrunk.rank(), shrunk.size()) == (remaining.index(rank), world - 1)
    t = torch.full((1001,), float(rank + 1))
    dist.all_reduce(t, group=shrunk)
    assert t.tolist() == [float(sum(r + 1 for r in remaining))] * 1001
    b = torch.full((3,), float(rank))
    dist.broadcast(b, group=shrunk, group_src=len(remaining) - 1)
    assert b.tolist() == [float(remaining[-1])] * 3


@pytest.mark.parametrize("world", [3, 4])
def test_shrink_group(world):
    run_ranks(check_shrink_group, world)
