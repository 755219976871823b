"""What is validated and measured (docs/validation.md): a :class:`Subject`, framework-neutral: a
callable that runs the source program on real arrays, its real inputs, and the traced IR with
the values of its inputs. Apart from :mod:`.validate` because :mod:`.headroom` times the same
subjects. Any frontend plugs in through :meth:`Subject.from_trace`, given a trace object with

* ``program``: the IR (:class:`solar.ir.program.Program`),
* ``output_names``: the IR names of the program's flattened array outputs, in order,
* ``values(fn, inputs)``: ``{IR input name: torch.Tensor}`` built from the real arrays,

which :class:`solar.frontend.torch.TorchTrace` provides (a JAX trace provides the same; its
arrays are converted with DLPack and timed with the host clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from solar.ir.program import Program

__all__ = ["Subject", "make_subject"]


def _is_jax(x) -> bool:
    return type(x).__module__.split(".")[0] in ("jax", "jaxlib")


def _is_jax_program(fn, args) -> bool:
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from solar.frontend.jax.trace import is_jax_program
    except ImportError:
        import jax

        return any(_is_jax(x) for x in jax.tree_util.tree_leaves(args))
    return is_jax_program(fn, args)


def _trace(model, args, *, precision, name, kwargs=None):
    """:func:`solar.trace`, or the JAX frontend directly for JAX programs."""
    if _is_jax_program(model, args):
        from solar.frontend.jax import trace_jax

        return trace_jax(model, args, precision=precision, name=name)
    from solar.api import trace

    return trace(model, args, kwargs=kwargs, precision=precision, name=name, framework="torch")


def _torch_leaves(result) -> list[torch.Tensor]:
    """Every tensor of a PyTorch result, in the order the trace names its outputs."""
    from solar.frontend.torch.structure import tensors

    return tensors(result, unique=False)


def _jax_leaves(result) -> list[torch.Tensor]:
    import jax

    try:
        from solar.frontend.jax.lower import to_torch
    except ImportError:
        to_torch = torch.from_dlpack
    return [to_torch(x) for x in jax.tree_util.tree_leaves(result) if hasattr(x, "shape")]


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
    trace: object = None  # the frontend's trace (TorchTrace: the fx graph, for per-kernel checks)
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
        trace,
        *,
        name: str | None = None,
        framework: str | None = None,
        device: str | torch.device | None = None,
        path: str | None = None,
        notes: Sequence[str] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Subject:
        """A subject from a source callable ``fn``, its real ``inputs`` (and ``kwargs``, for
        PyTorch) and a frontend trace (``program``, ``output_names``, ``values(fn, inputs)``:
        see the module docstring)."""
        args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
        kw = dict(kwargs or {})
        if framework is None:
            framework = "jax" if _is_jax_program(fn, args) else "torch"
        if framework == "jax":
            import jax

            call, call_args = fn, args
            try:  # flax modules are called through the frontend's own preparation
                from solar.frontend.jax.trace import prepare

                prep = prepare(fn, args, getattr(trace, "weight_args", None))
                call, call_args = jax.jit(prep.fn), prep.args
            except ImportError:
                pass

            def run():
                return jax.block_until_ready(call(*call_args))

            flatten, timer = _jax_leaves, "host"
        elif callable(getattr(trace, "run_source", None)):  # a training step

            def run():  # its returned tensors, then the parameters and state it updated
                return trace.run_source(fn, args)

            flatten, timer = list, None
        else:

            def run():
                return fn(*args, **kw)

            flatten, timer = _torch_leaves, None

        def values():
            return trace.values(fn, args, kw) if kw else trace.values(fn, args)

        if device is None:
            device = _device_of(fn, args)
        dev = torch.device(device)

        def sync():
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)

        return cls(
            name=name or trace.program.name,
            run=run,
            flatten=flatten,
            program=trace.program,
            values=values,
            output_names=list(trace.output_names),
            device=dev,
            framework=framework,
            timer=timer,
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


def _device_of(fn, args) -> torch.device:
    from torch.utils import _pytree as pytree

    leaves = pytree.tree_leaves(args)
    if any(_is_jax(x) for x in leaves) or _is_jax_program(fn, args):
        import jax

        leaves = jax.tree_util.tree_leaves(args)
    for t in leaves:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            return t.device
        if _is_jax(t) and hasattr(t, "devices"):
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
    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    t0 = time.perf_counter()
    if trace is None:
        trace = _trace(model, args, precision=precision, name=name, kwargs=kwargs)
    s = Subject.from_trace(model, args, trace, name=name, path=path, notes=notes, kwargs=kwargs)
    s.trace_s = time.perf_counter() - t0
    return s
