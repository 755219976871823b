"""The one-call entry points: ``solar.trace``, ``solar.lift_program``, ``solar.bound``."""

from __future__ import annotations

from collections.abc import Sequence

from solar.backend import analyze
from solar.graph import lift
from solar.hw import load_spec
from solar.ir.program import Program
from solar.report import Bound


def _is_torch_program(fn, inputs) -> bool:
    import torch

    if isinstance(fn, torch.nn.Module):
        return True
    return any(isinstance(x, torch.Tensor) for x in _flat(inputs))


def _flat(inputs):
    if isinstance(inputs, (list, tuple)):
        for x in inputs:
            yield from _flat(x)
    elif isinstance(inputs, dict):
        for x in inputs.values():
            yield from _flat(x)
    else:
        yield inputs


def trace(model, inputs: Sequence | object, *, precision: str | None = None, name=None):
    """Trace a program into the Affine Loop IR; returns the frontend's trace object
    (``.program`` is the IR). PyTorch modules and functions of tensors are supported."""
    if _is_torch_program(model, inputs):
        from solar.frontend.torch import trace_torch

        return trace_torch(model, inputs, precision=precision, name=name)
    raise TypeError(
        f"solar cannot tell which framework {type(model).__name__} belongs to: pass a "
        "torch.nn.Module or a function with torch.Tensor inputs"
    )


def bound_program(program: Program, hw="H100") -> Bound:
    """Bounds of an already-built IR program (any frontend)."""
    spec = load_spec(hw)
    b = analyze(lift(program), spec)
    b.ir = program
    return b


def bound(model, inputs, hw="H100", *, precision: str | None = None, name=None) -> Bound:
    """Speed-of-light bounds of ``model(*inputs)`` on ``hw`` (a catalogue name or alias such
    as ``"H100"``, a YAML path, a dict or a HardwareSpec).

    ``precision`` overrides the framework's fp32 matmul policy: ``"tf32"`` or ``"ieee"``.
    Tracing runs on fake tensors: meta-device models are analysed without allocating weights.
    """
    spec = load_spec(hw)
    traced = trace(model, inputs, precision=precision, name=name)
    b = analyze(lift(traced.program), spec)
    b.ir = traced.program
    return b
