"""collcomm as a torch.distributed backend for CPU tensors.

Importing this package registers the backend "collcomm", so that
``torch.distributed.init_process_group("collcomm", ...)`` runs on collcomm's host communicators.
PyTorch also registers it by itself, through the ``torch.backends`` entry point. The compiled
module (_C) loads when the first collcomm group is made, so a broken build cannot stop torch from
importing.
"""
from ._registration import BACKEND_NAME, register

__all__ = ["BACKEND_NAME", "ProcessGroupCollcomm", "register"]


def __getattr__(name):
    if name == "ProcessGroupCollcomm":
        from . import _C

        return _C.ProcessGroupCollcomm
    raise AttributeError(name)


register()
