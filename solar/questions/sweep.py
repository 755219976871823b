"""The best-case latency per problem size (the reverse of provisioning): one program bounded
at each size of a parameter on one GPU.

``sweep(model, make_inputs, sizes, hw=...)`` builds the program at each size (``make_inputs(n)``
returns the inputs, or ``(model, inputs)`` when ``model`` is None); :func:`sweep_problem` does
the same for a problem file by setting a module constant (``TOKENS``, ``SEQ``, ...) before
building its ``Model`` and inputs (:func:`solar.problem.problem_at`).

A sweep of at least :data:`MIN_FORMULA_POINTS` integer sizes (or ``symbolic=True``) traces
once with the swept size as a symbol and takes every point from the formulas
(:mod:`solar.questions.formula`): a 1,000-point sweep costs one trace and a fraction of a
second. Points outside the sizes that trace counts exactly (``n = 1``, which PyTorch decides
apart) are traced one by one; a program the formula cannot follow is traced at every point.
:attr:`Sweep.how` says which, in one line ("1000 points from one symbolic trace (formula), 1
point traced: ...").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from solar.api import bound_graph, trace_and_lift
from solar.backend.result import Bound, level_name
from solar.frozen import Frozen
from solar.hw import load_spec
from solar.problem import problem_at
from solar.viewable import Viewable

SCHEMA = "solar.sweep/1"

#: a sweep of at least this many integer sizes is taken from a formula (symbolic=None)
MIN_FORMULA_POINTS = 8


@dataclass(frozen=True)
class SweepPoint:
    """One size of a sweep: its three bounds and what binds them, its work, DRAM bytes and
    peak memory, and where the numbers come from: ``"formula"``, ``"graph"`` (the symbolic
    trace's graph evaluated at this size and analysed as numbers) or ``"traced"``."""

    size: object
    unfused: float
    fused: float
    cache_aware: float
    unfused_bound_by: str
    fused_bound_by: str
    cache_aware_bound_by: str
    flops: int
    bytes_fused: int
    bytes_cache_aware: int
    peak_bytes: int | None
    source: str = "traced"

    @staticmethod
    def of(size: object, b: Bound) -> SweepPoint:
        return SweepPoint(
            size,
            b.unfused,
            b.fused,
            b.cache_aware,
            b.unfused_bound_by,
            b.fused_bound_by,
            b.cache_aware_bound_by,
            sum(b.flops.values()),
            b.bytes_fused,
            b.bytes_cache_aware,
            b.memory.peak_bytes if b.memory is not None else None,
        )

    @staticmethod
    def of_row(size: object, row: dict, source: str = "formula") -> SweepPoint:
        """From a row of :func:`solar.questions.along.along`."""
        return SweepPoint(
            size,
            float(row["unfused"]),
            float(row["fused"]),
            float(row["cache_aware"]),
            row["unfused_bound_by"],
            row["fused_bound_by"],
            row["cache_aware_bound_by"],
            row["flops"],
            row["bytes_fused"],
            row["bytes_cache_aware"],
            row["peak_memory"],
            source,
        )

    def time(self, level: str) -> float:
        return getattr(self, level_name(level))

    def to_dict(self) -> dict:
        return {
            "size": self.size,
            "unfused_s": self.unfused,
            "fused_s": self.fused,
            "cache_aware_s": self.cache_aware,
            "unfused_bound_by": self.unfused_bound_by,
            "fused_bound_by": self.fused_bound_by,
            "cache_aware_bound_by": self.cache_aware_bound_by,
            "flops": self.flops,
            "bytes_fused": self.bytes_fused,
            "bytes_cache_aware": self.bytes_cache_aware,
            "peak_bytes": self.peak_bytes,
            "source": self.source,
        }


@dataclass(frozen=True, repr=False)
class Sweep(Frozen, Viewable):
    """Bounds of one program at several sizes of one parameter, on one GPU: a
    :class:`SweepPoint` per size, and :attr:`how` they were found (one line)."""

    program: str
    hw: str
    hw_key: str
    param: str
    sizes: tuple
    points: tuple[SweepPoint, ...]
    target_s: float | None = None
    how: str = ""
    formula: object = field(default=None, compare=False)  # the SymbolicBound, when one was used
    traced: Mapping = field(default_factory=dict, compare=False)  # size -> its traced Bound
    #: size -> Bound from formula, a memo of :attr:`bounds` (the one part that grows)
    _evaluated: dict = field(default_factory=dict, compare=False)

    @property
    def bounds(self) -> Sequence[Bound]:
        """The Bound at each size: the traced ones as traced, the others evaluated from the
        formula when first read (``formula.at``: ~10 ms each; :attr:`points` holds the
        numbers every view needs)."""
        return _Bounds(self)

    def times(self, level: str = "cache_aware") -> list[float]:
        return [p.time(level) for p in self.points]

    def largest_meeting(self, level: str = "cache_aware") -> object | None:
        """The largest size whose bound meets the target (None without a target or if none)."""
        if self.target_s is None:
            return None
        ok = [n for n, t in zip(self.sizes, self.times(level)) if t <= self.target_s]
        return max(ok) if ok else None

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "hw": self.hw,
            "hw_key": self.hw_key,
            "param": self.param,
            "target_s": self.target_s,
            "how": self.how,
            "points": [p.to_dict() for p in self.points],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        return f"Sweep({self.program!r} on {self.hw_key} over {self.param}: {self.how})"


class _Bounds(Sequence):
    """:attr:`Sweep.bounds`, evaluated on demand and kept."""

    def __init__(self, s: Sweep) -> None:
        self.s = s

    def __len__(self) -> int:
        return len(self.s.points)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n, s = self.s.sizes[i], self.s
        if n in s.traced:
            return s.traced[n]
        if n not in s._evaluated:
            s._evaluated[n] = s.formula.at(**{s.param: n})  # type: ignore[attr-defined]
        return s._evaluated[n]

    def __iter__(self) -> Iterator[Bound]:
        return (self[i] for i in range(len(self)))


def sweep(
    model,
    make_inputs: Callable,
    sizes: Iterable,
    hw="H100",
    *,
    param: str = "size",
    target_s: float | None = None,
    precision: str | None = None,
    name: str | None = None,
    symbolic: bool | None = None,
) -> Sweep:
    """Bounds of ``model(*make_inputs(n))`` for each ``n`` in ``sizes`` on ``hw``. With
    ``model=None``, ``make_inputs(n)`` returns ``(model, inputs)``. ``symbolic``: None takes
    the points from one symbolic trace when there are at least :data:`MIN_FORMULA_POINTS`
    integer sizes, True whatever their number, False never (one trace per point); see the
    module docstring."""
    spec = load_spec(hw)
    sizes = list(sizes)
    if not sizes:
        raise ValueError("sweep needs at least one size")

    def build(n):
        made = make_inputs(n)
        return made if model is None else (model, made)

    def trace(n, built) -> Bound:
        m, inputs = built
        _, g = trace_and_lift(m, inputs, precision=precision, name=name)
        return bound_graph(g, spec)

    wanted = symbolic if symbolic is not None else len(set(map(repr, sizes))) >= MIN_FORMULA_POINTS
    found = None
    if wanted:
        from solar.questions.formula import formula_points

        found = formula_points(build, trace, sizes, param, spec, precision=precision, name=name)
    traced: dict = dict(found.checked) if found is not None else {}
    points = []
    for i, n in enumerate(sizes):
        from_formula = found is not None and found.along is not None and n not in traced
        if from_formula and found.along.inside[i]:  # type: ignore[union-attr]
            a = found.along  # type: ignore[union-attr]
            points.append(SweepPoint.of_row(n, a.row(i), a.source(i)))
            continue
        if n not in traced:
            traced[n] = trace(n, build(n))
        points.append(SweepPoint.of(n, traced[n]))
    return Sweep(
        traced[next(iter(traced))].program if traced else found.bound.program,  # type: ignore[union-attr]
        spec.name,
        spec.key,
        param,
        sizes,
        points,
        target_s,
        _how(sizes, points, found, param, symbolic),
        found.bound if found is not None and found.along is not None else None,
        traced,
    )


def _how(sizes: list, points: list[SweepPoint], found, param: str, symbolic) -> str:
    """One line: how many points came from a formula and how many were traced, and why."""
    n_traced = len({repr(p.size) for p in points if p.source == "traced"})
    if found is None or found.along is None:
        if found is not None:
            why = found.why
        elif symbolic is False:
            why = "symbolic=False"
        else:
            why = f"a formula is tried from {MIN_FORMULA_POINTS} sizes, or with symbolic=True"
        return f"{_n(n_traced, 'point')} traced, one trace each ({why})"
    n_formula = sum(p.source in ("formula", "graph") for p in points)
    at = f"{param}={found.traced_at}"
    a = found.along
    how = f"formula, {_n(a.pieces, 'piece')}"
    if any(p.source == "graph" for p in points):
        how = (
            f"its graph analysed as numbers at each: the analysis specializes {param} at "
            f"{a.specialized}"
        )
    text = f"{_n(n_formula, 'point')} from one symbolic trace at {at} ({how}), "
    text += f"{_n(n_traced, 'point')} traced"
    parts = [f"{param}={n} checks the formula" for n in found.checked]
    outside = sorted({p.size for p in points if p.source == "traced"} - set(found.checked))
    if outside:
        shown = ", ".join(f"{param}={n}" for n in outside[:3])
        shown += ", ..." if len(outside) > 3 else ""
        parts.append(f"{shown} outside the sizes it counts exactly ({found.outside(outside[0])})")
    return text + ": " + "; ".join(parts)


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


def sweep_problem(
    path,
    param: str,
    values: Iterable,
    hw="H100",
    *,
    target_s: float | None = None,
    precision: str | None = None,
    symbolic: bool | None = None,
) -> Sweep:
    """:func:`sweep` over a problem file's module constant ``param`` (``TOKENS``, ``S``, ...)."""
    name = Path(path).stem
    return sweep(
        None,
        lambda v: problem_at(path, param, v),
        values,
        hw,
        param=param,
        target_s=target_s,
        precision=precision,
        name=name,
        symbolic=symbolic,
    )


def parse_sweep(text: str) -> tuple[str, list[int]]:
    """``"TOKENS=1024,2048"`` -> ``("TOKENS", [1024, 2048])``; a range ``"S=1..1000"`` (every
    integer, both ends) or ``"S=64..4096:64"`` (a step) lists its values."""
    name, eq, values = text.partition("=")
    try:
        sizes = [v for part in values.split(",") if part.strip() for v in _values(part.strip())]
    except ValueError:
        sizes = []
    if not eq or not name.strip() or not sizes:
        raise ValueError(
            f"--sweep wants NAME=v1,v2,... or NAME=lo..hi[:step] (integers), got {text!r}"
        )
    return name.strip(), sizes


def _values(part: str) -> list[int]:
    if ".." not in part:
        return [int(part)]
    lo, _, rest = part.partition("..")
    hi, _, step = rest.partition(":")
    k = int(step) if step else 1
    if k < 1 or int(lo) > int(hi):
        raise ValueError(part)
    return list(range(int(lo), int(hi) + 1, k))
