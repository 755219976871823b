"""What every frontend answers: one :class:`Trace` type, the :class:`Feed` that connects a trace
to real arrays, and the :class:`Frontend` protocol (a name, whether a model or input is its own,
and ``trace``).

A frontend turns a framework's program into IR; what differs between frameworks after that is
how the IR's inputs are read from the real arrays and how the source program is run on them
(validation, measurement): the trace's :class:`Feed`. Everything above the frontends reads a
:class:`Trace` and never asks which framework made it.

Nothing here imports torch or JAX.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from solar.ir.program import Program

if TYPE_CHECKING:  # pragma: no cover
    import torch

#: where an IR input's value comes from: ``("param", "layers.0.weight")``, ``("buffer", name)``,
#: ``("input", i or path)``, ``("kwarg", path)``, ``("state", ...)`` (PyTorch);
#: ``("weight" | "input", "params/dense1/kernel")`` (JAX)
Binding = tuple[str, object]


class Feed(Protocol):
    """How a trace meets real arrays: the IR inputs' values, and the source program run once.

    ``timer``: ``None`` (CUDA events on CUDA, the host clock elsewhere) or ``"host"`` (work on
    streams torch does not own)."""

    timer: str | None

    def values(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> dict[str, torch.Tensor]:
        """``{IR input name: torch.Tensor}`` of ``fn``'s state and the real ``inputs``."""
        ...

    def runner(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> Callable[[], object]:
        """A call that runs the source program once on the real inputs (prepared once, so
        repeated calls time the program, not its preparation)."""
        ...

    def flatten(self, trace: Trace, result: object) -> list[torch.Tensor]:
        """The arrays of a :meth:`runner` result as torch tensors, in ``output_names`` order."""
        ...


@dataclass(frozen=True)
class Trace:
    """A traced and lowered program, whatever its framework.

    ``bindings`` maps each IR input name to where its value comes from (:data:`Binding`).
    ``output_names`` are the IR names of the program's flattened array outputs, in the order
    the framework flattens its result; a training step's ``updated`` inputs (written in place:
    parameters, optimizer state) come last. ``assumptions`` are the lines the bound's report
    must state. ``graph`` is the framework's own record of the program (an fx ``GraphModule``,
    a ``ClosedJaxpr``), for per-kernel checks; ``kernels_of`` maps each of its nodes (an fx
    node's name; a jaxpr equation's key, ``"3"`` or ``"3/1"`` for equation 1 of equation 3's
    sub-jaxpr, :mod:`solar.frontend.jax.equation_keys`) to the IR kernels lowered from it, in
    program order (the compiled-program mapping, :mod:`solar.frontend.compiled`, reads it)."""

    framework: str
    program: Program
    bindings: Mapping[str, Binding]
    output_names: tuple[str, ...]
    feed: Feed
    assumptions: tuple[str, ...] = ()
    graph: object = None
    updated: tuple[str, ...] = ()
    kernels_of: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def values(
        self, fn: object, inputs: object, kwargs: Mapping[str, object] | None = None
    ) -> dict[str, torch.Tensor]:
        """The ``values`` mapping for :func:`solar.interp.torch.execute.execute`: real tensors
        of ``fn``'s state and of ``inputs`` (and ``kwargs``), by IR input name."""
        return self.feed.values(self, fn, as_args(inputs), dict(kwargs or {}))

    def runner(
        self, fn: object, inputs: object, kwargs: Mapping[str, object] | None = None
    ) -> Callable[[], object]:
        """A call running the source program once on real ``inputs`` (:meth:`Feed.runner`)."""
        return self.feed.runner(self, fn, as_args(inputs), dict(kwargs or {}))

    def flatten(self, result: object) -> list[torch.Tensor]:
        """A :meth:`runner` result's arrays as torch tensors, in ``output_names`` order."""
        return self.feed.flatten(self, result)

    def reference(
        self, fn: object, inputs: object, kwargs: Mapping[str, object] | None = None
    ) -> list[torch.Tensor]:
        """The source program run once on real ``inputs``: its outputs as torch tensors, in the
        order of :attr:`output_names`."""
        return self.flatten(self.runner(fn, inputs, kwargs)())


class SymbolicShapeError(ValueError):
    """An input whose size is symbolic with no example value: nothing to specialise to."""


def as_args(inputs: object) -> tuple:
    """The positional arguments: a tuple or list as they are, anything else as one argument."""
    return tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)


class Frontend(ABC):
    """One framework's way in: its ``name``, whether a value is its own (by the value's type
    alone, importing nothing), and :meth:`trace`. The framework is imported only when a trace
    asks for it."""

    name: str
    label: str  # as a person names it: "PyTorch", "JAX"

    @abstractmethod
    def owns(self, value: object) -> bool:
        """Whether ``value`` (a model or an input leaf) is of this framework, by its type."""

    def owns_program(self, fn: object, inputs: object) -> bool:
        """Whether ``fn(*inputs)`` is a program of this framework, looking only at ``fn`` and
        the top-level inputs (a cheap check for callers that hold a program of either)."""
        return self.owns(fn) or any(self.owns(x) for x in leaves(inputs))

    @abstractmethod
    def trace(
        self,
        model: object,
        inputs: object,
        *,
        kwargs: Mapping[str, object] | None = None,
        precision: str | None = None,
        name: str | None = None,
        symbolic: object = None,
        **sizes: object,
    ) -> Trace:
        """Trace ``model(*inputs, **kwargs)`` into IR. ``symbolic``: the frontend's symbolic
        sizes (:mod:`solar.frontend.torch.symbolic_shapes`,
        :mod:`solar.frontend.jax.symbolic_dims`);
        ``sizes``: options only some frontends take (PyTorch's ``observe``, ``routing``)."""


def type_names(x: object) -> set[str]:
    """``module.Class`` of every class in ``type(x)``'s MRO (no framework is imported)."""
    return {f"{c.__module__}.{c.__qualname__}" for c in type(x).__mro__}


def leaves(x: object, owned: Callable[[object], bool] = lambda _: False) -> Sequence[object]:
    """The leaves of nested tuples, lists and dicts, and the attribute values of other
    objects one level down (dataclasses, KV caches, a Flax module's variables) unless
    ``owned(x)`` says the object is a framework's own value."""
    out: list[object] = []
    _collect(x, owned, out)
    return out


def _collect(x: object, owned: Callable[[object], bool], out: list[object]) -> None:
    if isinstance(x, (list, tuple)):
        for y in x:
            _collect(y, owned, out)
    elif isinstance(x, dict):
        for y in x.values():
            _collect(y, owned, out)
    else:
        out.append(x)
        if not owned(x) and hasattr(x, "__dict__") and not callable(x):
            for y in vars(x).values():
                if isinstance(y, (list, tuple, dict)):
                    _collect(y, owned, out)
                else:
                    out.append(y)
