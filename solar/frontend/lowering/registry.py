"""One registry class for every frontend: operator -> lowering rule.

Each frontend has its instance (``solar.frontend.torch.registry.LOWERINGS``: aten overloads and
packets -> functions; ``solar.frontend.jax.registry.LOWERINGS``: primitive names -> rules) and
its own ``@lowering`` decorator over it. Registering an operator twice is an error naming both
functions: two lowerings of one operator would otherwise shadow each other silently, by import
order. A rule that deliberately replaces another (one that wraps it) says so (``replace=True``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Generic, TypeVar

K = TypeVar("K")
R = TypeVar("R")


class DuplicateLoweringError(ValueError):
    """An operator registered a second time without ``replace=True``."""


def function_name(fn: object) -> str:
    """``module.qualname`` of a lowering function (its ``repr`` for other callables)."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    return f"{module}.{name}" if module and name else repr(fn)


def _same(op: object) -> object:
    return op


def _itself(rule: object) -> object:
    return rule


class Registry(Mapping[K, R], Generic[K, R]):
    """Operator -> lowering rule of one frontend (a read-only mapping; :meth:`add` registers).

    ``key`` turns what a decorator is given into the table's key, rejecting what the frontend
    cannot register (a ``TypeError`` saying what it takes); ``function_of`` is the function of a
    rule, named in the duplicate error."""

    def __init__(
        self,
        frontend: str,
        *,
        key: Callable[[object], K] = _same,  # type: ignore[assignment]
        function_of: Callable[[R], object] = _itself,
    ) -> None:
        self.frontend = frontend
        self._key = key
        self._function_of = function_of
        self._rules: dict[K, R] = {}

    def key(self, op: object) -> K:
        """The table key of ``op``."""
        return self._key(op)

    def add(self, op: object, rule: R, *, replace: bool = False) -> None:
        """Register ``rule`` for ``op``. ``replace``: ``op`` has a rule already, which this one
        replaces (and may wrap: read it first with ``registry[op]``)."""
        k = self._key(op)
        old = self._rules.get(k)
        if replace and old is None:
            raise KeyError(f"{self.frontend} lowering of {k}: nothing registered to replace")
        if not replace and old is not None:
            raise DuplicateLoweringError(
                f"{self.frontend} operator {k} is registered twice: by "
                f"{function_name(self._function_of(old))} and by "
                f"{function_name(self._function_of(rule))}; keep one, or register the second "
                "with replace=True if it wraps the first"
            )
        self._rules[k] = rule

    def remove(self, op: object) -> R | None:
        """Unregister ``op``; its rule, or None if it had none."""
        return self._rules.pop(self._key(op), None)

    @contextmanager
    def scoped(self) -> Iterator[Registry[K, R]]:
        """Every registration and removal made inside the block is undone at its end (tests
        that add or drop a lowering)."""
        saved = dict(self._rules)
        try:
            yield self
        finally:
            self._rules.clear()
            self._rules.update(saved)

    def __getitem__(self, op: object) -> R:
        return self._rules[self._key(op)]

    def get(self, op: object, default: R | None = None) -> R | None:  # type: ignore[override]
        try:
            return self._rules.get(self._key(op), default)
        except TypeError:  # not a key this registry takes: no rule
            return default

    def __contains__(self, op: object) -> bool:
        return self.get(op) is not None

    def __iter__(self) -> Iterator[K]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __repr__(self) -> str:
        return f"<{self.frontend} lowering registry: {len(self)} operators>"
