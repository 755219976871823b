"""The PyTorch frontend's one entry (:meth:`solar.frontend.frameworks.TorchFrontend.trace`): a
module or function of tensors (:func:`~solar.frontend.torch.trace.trace_torch`) or a training
step (:func:`~solar.frontend.torch.training.trace_training_step`), after checking that every
input size is concrete or has an example value."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from solar.frontend.protocol import SymbolicShapeError, Trace
from solar.frontend.torch.structure import tensors as structure_tensors
from solar.frontend.torch.symbolic_shapes import SymbolicShapes
from solar.frontend.torch.trace import trace_torch
from solar.frontend.torch.training import is_training_step, trace_training_step
from solar.frontend.torchvision_ops import torchvision_importable


def trace(
    model: object,
    inputs: object,
    *,
    kwargs: Mapping[str, object] | None = None,
    precision: str | None = None,
    name: str | None = None,
    symbolic: SymbolicShapes | None = None,
    **sizes: object,
) -> Trace:
    """Trace ``model(*inputs, **kwargs)``: a training step (no ``kwargs``: bind them into it)
    or any other module or function. ``sizes``: ``observe`` and ``routing`` of
    :func:`~solar.frontend.torch.trace.trace_torch`."""
    if symbolic is None:
        check_concrete_shapes(model, (inputs, kwargs or {}))
    with torchvision_importable():  # a model may import torchvision while it runs
        return _trace(model, inputs, kwargs, precision, name, symbolic, sizes)


def _trace(model, inputs, kwargs, precision, name, symbolic, sizes) -> Trace:
    if is_training_step(model):
        if kwargs:
            raise TypeError("kwargs are not supported for a training step; bind them into it")
        return trace_training_step(model, inputs, precision=precision, name=name, symbolic=symbolic)
    return trace_torch(
        model,  # type: ignore[arg-type]
        inputs,
        kwargs=kwargs,
        precision=precision,
        name=name,
        symbolic=symbolic,
        **sizes,  # type: ignore[arg-type]
    )


def _flat(inputs: object):
    """The leaves of nested tuples, lists and dicts, and the tensors of any other object
    (a PyTorch structure: dataclasses, KV caches)."""
    if isinstance(inputs, (list, tuple)):
        for x in inputs:
            yield from _flat(x)
    elif isinstance(inputs, dict):
        for x in inputs.values():
            yield from _flat(x)
    elif hasattr(inputs, "__dict__") and not callable(inputs):
        yield from structure_tensors(inputs)
    else:
        yield inputs


def check_concrete_shapes(model: object, inputs: object) -> None:
    """solar analyses concrete shapes. A symbolic size with an example value (a hint) is
    specialised to it, as fake-tensor tracing does; one without (an unbacked or hint-less
    symbol) cannot be, and is rejected here in one line instead of deep inside the trace."""
    found = [(f"input {i}", x) for i, x in enumerate(_flat(inputs))]
    if isinstance(model, torch.nn.Module):
        found += [(f"parameter {n!r}", t) for n, t in model.named_parameters()]
        found += [(f"buffer {n!r}", t) for n, t in model.named_buffers()]
    for what, t in found:
        if not isinstance(t, torch.Tensor):
            continue
        for d in t.shape:
            node = getattr(d, "node", None)  # a SymInt's SymNode knows whether it has a hint
            if isinstance(d, int) or node is None or not hasattr(node, "has_hint"):
                continue
            if not node.has_hint():
                raise SymbolicShapeError(
                    f"{what} has a symbolic size {d} with no example value; solar bounds "
                    "concrete shapes: pass tensors (meta tensors are fine) of the sizes to analyse"
                )
