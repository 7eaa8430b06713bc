"""Crafted inputs whose every partial result is exact in every dtype collcomm reduces, and their references.

Values are 0..2 (1..2 for PRODUCT), so sums over at most 4 ranks stay within fp8 e5m2's exact
integers (8) and products are powers of two; references are computed in float64 from every rank's
input (each rank can make all of them) and cast once.
"""
import torch

FLOATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.uint32, torch.uint64]
ALL_DTYPES = FLOATS + INTS
# What Gloo reduces too, so those results are compared with Gloo's bit for bit as well.
GLOO_DTYPES = [torch.float64, torch.float32, torch.float16, torch.int8, torch.uint8, torch.int32, torch.int64]


def craft(rank, numel, dtype, salt=0, product=False):
    base = (torch.arange(numel, dtype=torch.int64) * 7 + rank * 3 + salt) % (2 if product else 3)
    return (base + (1 if product else 0)).to(dtype)


def reference(world, numel, dtype, op, salt=0):
    """The reduction of every rank's crafted input, in float64 then cast to dtype."""
    product = op == "product"
    xs = [craft(r, numel, torch.int64, salt, product).double() for r in range(world)]
    out = xs[0].clone()
    for x in xs[1:]:
        if op in ("sum", "avg"):
            out += x
        elif op == "product":
            out *= x
        elif op == "min":
            out = torch.minimum(out, x)
        elif op == "max":
            out = torch.maximum(out, x)
    if op == "avg":
        out /= world
    return out.to(dtype)


def bits(t):
    """The tensor's bytes, for bit-for-bit comparison of any dtype (fp8 and uint64 included)."""
    return t.contiguous().view(-1).view(torch.uint8)


def assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{tuple(got.shape)} vs {want.dtype}{tuple(want.shape)}"
    if not torch.equal(bits(got), bits(want)):
        raise AssertionError(f"{what}: got {got.double().tolist()[:16]} want {want.double().tolist()[:16]}")
