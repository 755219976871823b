"""The analysis API: ``solar.trace``, ``solar.bound``, ``solar.bound_program``, and the
trace-once/analyse-many pair (:func:`trace_and_lift`, :func:`bound_graph`) the questions on top
of a bound (compare, provision, sweep) are built from.

Layer: above the frontends, the graph and the backends; below the questions, the device-side
modules, the views and the CLI.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from solar.backend import analyze
from solar.backend.result import Bound
from solar.graph import lift
from solar.hw import load_spec
from solar.ir.program import Program


def _is_torch_program(fn, inputs) -> bool:
    import torch

    if isinstance(fn, torch.nn.Module):
        return True
    return any(isinstance(x, torch.Tensor) for x in _flat(inputs))


def _is_torch_training_step(fn, inputs) -> bool:
    """A step function without tensor arguments that reaches a torch.optim optimizer."""
    if _is_jax_program(fn, inputs):
        return False
    from solar.frontend.torch.step_state import find_step_objects

    return callable(fn) and bool(find_step_objects(fn)[1])


def _is_jax_program(fn, inputs) -> bool:
    if "jax" not in sys.modules:  # JAX inputs or Flax modules imply JAX is imported
        return False
    from solar.frontend.jax import is_jax_program

    return is_jax_program(fn, inputs)


def _flat(inputs):
    if isinstance(inputs, (list, tuple)):
        for x in inputs:
            yield from _flat(x)
    elif isinstance(inputs, dict):
        for x in inputs.values():
            yield from _flat(x)
    else:
        yield inputs


class SymbolicShapeError(ValueError):
    """An input whose size is symbolic with no example value: nothing to specialise to."""


def _check_concrete_shapes(model, inputs) -> None:
    """solar analyses concrete shapes. A symbolic size with an example value (a hint) is
    specialised to it, as fake-tensor tracing does; one without (an unbacked or hint-less
    symbol) cannot be, and is rejected here in one line instead of deep inside the trace."""
    import torch

    tensors = [(f"input {i}", x) for i, x in enumerate(_flat(inputs))]
    if isinstance(model, torch.nn.Module):
        tensors += [(f"parameter {n!r}", t) for n, t in model.named_parameters()]
        tensors += [(f"buffer {n!r}", t) for n, t in model.named_buffers()]
    for what, t in tensors:
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


def trace(model, inputs: Sequence | object, *, precision: str | None = None, name=None):
    """Trace a program into the Affine Loop IR; returns the frontend's trace object
    (``.program`` is the IR). PyTorch modules and functions of tensors, JAX functions of
    arrays or ``jax.ShapeDtypeStruct`` s (pytrees welcome) and Flax modules are supported."""
    with gc_paused():
        return _trace(model, inputs, precision=precision, name=name)


def _trace(model, inputs, *, precision: str | None, name):
    if _is_torch_program(model, inputs) or _is_torch_training_step(model, inputs):
        from solar.frontend.torch import trace_torch
        from solar.frontend.torch.training import is_training_step, trace_training_step

        _check_concrete_shapes(model, inputs)
        if is_training_step(model):
            return trace_training_step(model, inputs, precision=precision, name=name)
        return trace_torch(model, inputs, precision=precision, name=name)
    if _is_jax_program(model, inputs):
        from solar.frontend.jax import trace_jax

        return trace_jax(model, inputs, precision=precision, name=name)
    raise TypeError(
        f"solar cannot tell which framework {type(model).__name__} belongs to: pass a "
        "torch.nn.Module or a function with torch.Tensor inputs, or a JAX function (or Flax "
        "module) with JAX arrays or jax.ShapeDtypeStruct inputs"
    )


def trace_and_lift(model, inputs, *, precision: str | None = None, name=None):
    """Trace and lift once: ``(IR program, einsum graph)``. The trace's assumptions (autocast,
    precision policy, ...) travel with the graph (``g.graph["trace_notes"]``) into every bound
    :func:`bound_graph` makes of it."""
    with gc_paused():
        traced = trace(model, inputs, precision=precision, name=name)
        g = lift(traced.program)
    g.graph["trace_notes"] = list(getattr(traced, "assumptions", None) or [])
    return traced.program, g


def bound_graph(program: Program | None, g, spec) -> Bound:
    """Bounds of an already lifted graph on one spec (a HardwareSpec, name or path)."""
    b = analyze(g, load_spec(spec), notes=g.graph.get("trace_notes"))
    b.ir = program
    return b


def bound_program(program: Program, hw="H100") -> Bound:
    """Bounds of an already-built IR program (any frontend)."""
    return bound_graph(program, lift(program), hw)


def bound(model, inputs, hw="H100", *, precision: str | None = None, name=None) -> Bound:
    """Speed-of-light bounds of ``model(*inputs)`` on ``hw`` (a catalogue name or alias such
    as ``"H100"``, a YAML path, a dict or a HardwareSpec).

    ``precision`` overrides the framework's fp32 matmul policy: ``"tf32"`` or ``"ieee"``.
    Tracing runs on fake tensors (PyTorch) or abstract values (JAX): meta-device models and
    ``jax.ShapeDtypeStruct`` inputs are analysed without allocating weights.
    """
    spec = load_spec(hw)
    with gc_paused():
        program, g = trace_and_lift(model, inputs, precision=precision, name=name)
        return bound_graph(program, g, spec)


def bound_training(
    model,
    inputs,
    hw="H100",
    *,
    loss=None,
    targets=(),
    optimizer=None,
    precision: str | None = None,
    name: str | None = None,
) -> Bound:
    """Speed-of-light bounds of one training step of a PyTorch ``model``: ``out =
    model(*inputs)``, ``loss(out, *targets)`` (default: ``out`` is the loss),
    ``loss.backward()``, ``optimizer.step()``.

    ``optimizer``: a ``torch.optim.Optimizer`` over the model's parameters, an optimizer class
    or a factory ``f(parameters)`` (default: ``torch.optim.AdamW``). Traced on fake tensors
    in the steady state (the optimizer's state exists; see :mod:`solar.frontend.torch.training`),
    so a meta-device model is analysed without allocating weights, gradients or state.
    """
    from solar.frontend.torch.training import make_train_step

    step, args = make_train_step(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    return bound(step, args, hw, precision=precision, name=name or f"{type(model).__name__} step")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one analysis. Tracing creates hundreds of
    thousands of long-lived objects (fx nodes, fake tensors, node metadata, IR), and every full
    collection walks all of them: about a tenth of the time of a large model, for a few
    thousand garbage objects. They are collected when the analysis is done."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
