"""The one-call entry points: ``solar.trace``, ``solar.lift_program``, ``solar.bound``."""

from __future__ import annotations

import sys
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


def trace(model, inputs: Sequence | object, *, precision: str | None = None, name=None):
    """Trace a program into the Affine Loop IR; returns the frontend's trace object
    (``.program`` is the IR). PyTorch modules and functions of tensors, JAX functions of
    arrays or ``jax.ShapeDtypeStruct`` s (pytrees welcome) and Flax modules are supported."""
    if _is_torch_program(model, inputs):
        from solar.frontend.torch import trace_torch

        return trace_torch(model, inputs, precision=precision, name=name)
    if _is_jax_program(model, inputs):
        from solar.frontend.jax import trace_jax

        return trace_jax(model, inputs, precision=precision, name=name)
    raise TypeError(
        f"solar cannot tell which framework {type(model).__name__} belongs to: pass a "
        "torch.nn.Module or a function with torch.Tensor inputs, or a JAX function (or Flax "
        "module) with JAX arrays or jax.ShapeDtypeStruct inputs"
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
    Tracing runs on fake tensors (PyTorch) or abstract values (JAX): meta-device models and
    ``jax.ShapeDtypeStruct`` inputs are analysed without allocating weights.
    """
    spec = load_spec(hw)
    traced = trace(model, inputs, precision=precision, name=name)
    b = analyze(lift(traced.program), spec, notes=getattr(traced, "assumptions", None))
    b.ir = traced.program
    return b
