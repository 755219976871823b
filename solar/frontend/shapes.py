"""The symbolic shapes a frontend's trace runs under, and the two size readers its lowering
uses: a framework's symbolic int becomes a :class:`~solar.algebra.size.Size` while a trace
with symbolic sizes is active, and its plain value otherwise.

PyTorch (``SymInt``) and JAX (``_DimExpr``) each supply the object that converts one size
(``shapes.size(x)``) and how a size reads with no symbolic trace active.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar


class Shapes(Protocol):
    def size(self, x: object) -> object: ...


S = TypeVar("S", bound=Shapes)


class ActiveShapes(Generic[S]):
    """The frontend's shapes of the trace now running (a context variable, so concurrent
    traces in threads do not see each other's)."""

    def __init__(self, name: str, plain: Callable[[object], object]) -> None:
        self._var: contextvars.ContextVar[S | None] = contextvars.ContextVar(name, default=None)
        self._plain = plain

    def get(self) -> S | None:
        return self._var.get()

    @contextlib.contextmanager
    def use(self, shapes: S) -> Iterator[S]:
        token = self._var.set(shapes)
        try:
            yield shapes
        finally:
            self._var.reset(token)

    def size(self, x: object) -> object:
        """An int read off a traced value, keeping its symbol (a :class:`Size` while a
        symbolic trace is active; the plain value otherwise)."""
        shapes = self._var.get()
        return shapes.size(x) if shapes is not None else self._plain(x)

    def sizes(self, xs: Sequence[object]) -> tuple[int, ...]:
        """:meth:`size` of each, as ints (``tuple(int(s) for s in shape)`` that keeps symbols)."""
        return tuple(v if isinstance(v, int) else int(v) for v in map(self.size, xs))  # type: ignore[call-overload]
