"""collcomm as a torch.distributed backend for CPU tensors, and CUDA tensors where built with CUDA.

Importing this package registers the backend "collcomm", so that
``torch.distributed.init_process_group("collcomm", ...)`` runs on collcomm's host communicators
(CPU tensors) and GPU communicators (CUDA tensors). PyTorch also registers it by itself, through the
``torch.backends`` entry point. Registration loads the compiled module (_C) to learn whether it has
CUDA; a module that cannot load registers the backend for CPU only, so a broken build cannot stop
torch from importing (making a group then says why).
"""
from ._registration import BACKEND_NAME, register

__all__ = ["BACKEND_NAME", "ProcessGroupCollcomm", "register"]


def __getattr__(name):
    if name == "ProcessGroupCollcomm":
        from . import _C

        return _C.ProcessGroupCollcomm
    raise AttributeError(name)


register()
