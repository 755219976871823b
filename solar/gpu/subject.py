"""What is validated and measured (docs/validation.md): a :class:`Subject`, framework-neutral: a
callable that runs the source program on real arrays, its real inputs, and the traced IR with
the values of its inputs. Apart from :mod:`.validate` because :mod:`.headroom` times the same
subjects. Any frontend plugs in through :meth:`Subject.from_trace`, given its
:class:`~solar.frontend.protocol.Trace`: the trace's feed reads the IR inputs' values from the
real arrays, runs the source program and flattens its result (a JAX trace's arrays are
converted with DLPack and timed with the host clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from solar.frontend.frameworks import FRONTENDS
from solar.frontend.protocol import Trace, as_args
from solar.ir.program import Program

__all__ = ["Subject", "make_subject"]


def _trace(model, args, *, precision, name, kwargs=None) -> Trace:
    """:func:`solar.trace` of a program of either framework (a JAX one by its values, else
    PyTorch's: a step function of no tensors is PyTorch's)."""
    from solar.api import trace

    jax = FRONTENDS["jax"].owns_program(model, args)
    framework = "jax" if jax else "torch"
    return trace(model, args, kwargs=kwargs, precision=precision, name=name, framework=framework)


@dataclass
class Subject:
    """A program ready to validate and measure, whatever its framework.

    ``run()`` runs the source program once on its real inputs and returns its result;
    ``flatten(result)`` gives the result's arrays as torch tensors in the order of
    ``output_names``; ``values()`` the IR's input values; ``timer`` is ``None`` (CUDA events
    on CUDA, the host clock elsewhere) or ``"host"`` (work on streams torch does not own)."""

    name: str
    run: Callable[[], object]
    flatten: Callable[[object], list[torch.Tensor]]
    program: Program
    values: Callable[[], Mapping[str, torch.Tensor]]
    output_names: list[str]
    device: torch.device
    framework: str = "torch"
    timer: str | None = None
    sync: Callable[[], None] | None = None
    trace: Trace | None = None  # the frontend's trace (set by from_trace)
    model: object = None
    inputs: tuple = ()
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    trace_s: float = 0.0
    kwargs: dict = field(default_factory=dict)

    @classmethod
    def from_trace(
        cls,
        fn,
        inputs,
        trace: Trace,
        *,
        name: str | None = None,
        device: str | torch.device | None = None,
        path: str | None = None,
        notes: Sequence[str] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Subject:
        """A subject from a source callable ``fn``, its real ``inputs`` (and ``kwargs``, for
        PyTorch) and its frontend trace."""
        args = as_args(inputs)
        kw = dict(kwargs or {})
        run = trace.runner(fn, args, kw)

        def values():
            return trace.values(fn, args, kw)

        if device is None:
            device = _device_of(fn, args, trace.framework)
        dev = torch.device(device)

        def sync():
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)

        return cls(
            name=name or trace.program.name,
            run=run,
            flatten=trace.flatten,
            program=trace.program,
            values=values,
            output_names=list(trace.output_names),
            device=dev,
            framework=trace.framework,
            timer=trace.feed.timer,
            sync=sync,
            trace=trace,
            model=fn,
            inputs=args,
            path=path,
            notes=list(notes),
            kwargs=kw,
        )

    def synchronize(self) -> None:
        if self.sync is not None:
            self.sync()


def _device_of(fn, args, framework: str) -> torch.device:
    if framework == "jax":
        import jax

        leaves = jax.tree_util.tree_leaves(args)
    else:
        from torch.utils import _pytree as pytree

        leaves = pytree.tree_leaves(args)
    for t in leaves:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            return t.device
        if FRONTENDS["jax"].owns(t) and hasattr(t, "devices"):
            d = next(iter(t.devices()))
            return torch.device("cuda" if d.platform == "gpu" else "cpu")
    if isinstance(fn, torch.nn.Module):
        for t in [*fn.parameters(), *fn.buffers()]:
            if t.device.type != "meta":
                return t.device
    return torch.device("cpu")


def make_subject(
    model,
    inputs,
    *,
    trace=None,
    name: str | None = None,
    precision: str | None = None,
    path: str | None = None,
    notes: Sequence[str] = (),
    kwargs: Mapping[str, object] | None = None,
) -> Subject:
    """A :class:`Subject` for a module or function on real arrays (traced here with
    :func:`solar.trace` unless ``trace`` is given; the framework is told from the inputs).
    ``kwargs``: keyword arguments of a PyTorch program."""
    args = as_args(inputs)
    t0 = time.perf_counter()
    if trace is None:
        trace = _trace(model, args, precision=precision, name=name, kwargs=kwargs)
    s = Subject.from_trace(model, args, trace, name=name, path=path, notes=notes, kwargs=kwargs)
    s.trace_s = time.perf_counter() - t0
    return s
