"""Modules that wrap another: bounded as the module they wrap, and the report says so.

- ``torch.compile(model)`` returns an ``OptimizedModule`` whose ``_orig_mod`` is the model:
  solar traces the eager operators of that model (compiling is not needed to unwrap it).
- ``nn.DataParallel`` and ``nn.parallel.DistributedDataParallel`` hold the replicated model
  in ``.module``: solar bounds one replica on one GPU.

Wrappers nest (a compiled DDP model): each layer is peeled off and named in the assumptions.
"""

from __future__ import annotations

import torch

#: What the report says of each wrapper, by its class name.
WRAPPER_NOTES = {
    "OptimizedModule": (
        "_orig_mod",
        "a torch.compile'd module (OptimizedModule) is bounded as the eager module it wraps "
        "(._orig_mod): its aten operators as eager PyTorch launches them; the fused bound "
        "already assumes the best fusion a compiler could find",
    ),
    "DataParallel": (
        "module",
        "an nn.DataParallel wrapper is bounded as its .module on one GPU (the scatter of "
        "inputs, replication and gather across GPUs are not included)",
    ),
    "DistributedDataParallel": (
        "module",
        "a DistributedDataParallel wrapper is bounded as its .module on one GPU (the "
        "gradient all-reduce across ranks is not included)",
    ),
}


def _wrapper_classes() -> dict[type, str]:
    classes: dict[type, str] = {
        torch.nn.DataParallel: "DataParallel",
        torch.nn.parallel.DistributedDataParallel: "DistributedDataParallel",
    }
    try:
        from torch._dynamo.eval_frame import OptimizedModule

        classes[OptimizedModule] = "OptimizedModule"
    except ImportError:  # a torch without dynamo: nothing to unwrap
        pass
    return classes


def unwrap_module(fn: object) -> tuple[object, list[str]]:
    """The module ``fn`` wraps (``fn`` itself if it is no wrapper) and one note per wrapper
    peeled off, outermost first."""
    notes: list[str] = []
    classes = _wrapper_classes()
    while isinstance(fn, torch.nn.Module):
        kind = next((name for cls, name in classes.items() if isinstance(fn, cls)), None)
        if kind is None:
            break
        attr, note = WRAPPER_NOTES[kind]
        fn = getattr(fn, attr)
        notes.append(note)
    return fn, notes
