"""Registers the "collcomm" backend with torch.distributed (idempotent).

Also the ``torch.backends`` entry point: torch calls ``register`` at the end of its own import,
so ``init_process_group("collcomm")`` works without importing collcomm_torch first.
"""
BACKEND_NAME = "collcomm"


def _create_backend(dist_options, backend_options):
    """The creator torch calls (extended API) for each process group that uses collcomm."""
    import torch.distributed  # noqa: F401  (first: _C's classes derive from torch's)

    from . import _C

    return _C.ProcessGroupCollcomm(
        dist_options.store,
        dist_options.group_rank,
        dist_options.group_size,
        dist_options.timeout,
        str(dist_options.group_id),
    )


def register():
    import torch.distributed as dist

    if not dist.is_available():
        return
    if BACKEND_NAME in dist.Backend.backend_list:
        return
    # One backend object serves both device types: CPU tensors on a host communicator, CUDA tensors
    # on a GPU communicator per device (made at its first operation). This runs while torch is being
    # imported: a module that cannot load must not stop that import (making a group says why).
    try:
        from . import _C

        devices = ["cpu", "cuda"] if _C.has_cuda() else ["cpu"]
    except Exception:  # noqa: BLE001
        devices = ["cpu"]
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, extended_api=True, devices=devices)
