"""A sweep's points from one symbolic trace: the swept size as a symbol, every point from
the formulas (:func:`formula_points`).

The program is built at two sizes of the sweep, ``n0`` (the median of those >= 2: PyTorch
decides sizes 0 and 1 apart) and ``n1`` (the largest); the dims equal to the size become its
symbol (:mod:`solar.questions.marks`), the program is traced once at ``n0`` with that symbol
(:func:`solar.bound` with ``symbolic=``), and :func:`solar.questions.along.along` gives every
point inside the trace's count region. One point inside (the largest other than ``n0``) is
also traced as usual and must agree with the formula (counts equal, times within 1e-9
relative): a size that escapes the formula without a guard (a Python number kept in the
model, a loop over ``range(n)``) shows up there, and the sweep then traces every point.
Points outside the count region (``n = 1`` where the trace decided ``n > 1``) are traced by
the caller, one trace each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from solar.algebra.size import symbol
from solar.backend.result import Bound
from solar.questions.along import COUNTS, TIMES, Along, along, count_of
from solar.questions.executors import one_line
from solar.questions.marks import size_marks
from solar.symbolic.symbolic_bound import SymbolicBound
from solar.symbolic.trace import bound_symbolic

#: the relative tolerance of the check point's times (counts must be equal)
REL_TOL = 1e-9


@dataclass
class FormulaPoints:
    """What one symbolic trace gives a sweep: ``along`` (rows at every size, ``inside`` the
    count region), the size checked by a trace and its Bound, or ``why`` not (then
    ``along`` is None and every point is traced)."""

    why: str = ""
    bound: SymbolicBound | None = None
    traced_at: int = 0
    along: Along | None = None
    checked: dict[int, Bound] = field(default_factory=dict)  # size -> its traced Bound

    def outside(self, n: int) -> str:
        """Why ``n`` is outside the trace's count region (the guard that fails there)."""
        assert self.bound is not None and self.bound.counts_region is not None
        g = self.bound.counts_region.failing({symbol(k): v for k, v in self._at(n).items()})
        return str(g) if g is not None else "inside"

    def _at(self, n: int) -> dict[str, int]:
        assert self.bound is not None and self.along is not None
        return {**self.bound.sizes, self.along.size: n}


def probe_sizes(sizes: Sequence[int]) -> tuple[int, int] | None:
    """``(n0, n1)``: the size to trace at (the median of the sizes >= 2) and the other one the
    program is built at (the largest), or None with fewer than two sizes >= 2."""
    usable = sorted({n for n in sizes if n >= 2})
    if len(usable) < 2:
        return None
    n0 = usable[len(usable) // 2]
    return n0, (usable[-1] if usable[-1] != n0 else usable[0])


def formula_points(
    build: Callable[[int], tuple[object, tuple]],
    trace: Callable[[int, tuple[object, tuple]], Bound],
    sizes: Sequence[object],
    param: str,
    spec,
    *,
    precision: str | None = None,
    name: str | None = None,
) -> FormulaPoints:
    """Rows of a sweep over ``param`` from one symbolic trace (see the module docstring).
    ``build(n)`` returns ``(model, inputs)`` at ``n``; ``trace(n, built)`` their Bound."""
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in sizes):
        return FormulaPoints(f"the sizes of {param} are not all positive integers")
    if not param.isidentifier():
        return FormulaPoints(f"{param!r} cannot name a symbol (not an identifier)")
    probes = probe_sizes(sizes)  # type: ignore[arg-type]
    if probes is None:
        return FormulaPoints(f"fewer than two sizes of {param} above 1")
    n0, n1 = probes
    built0, built1 = build(n0), build(n1)
    places, why = size_marks(param, built0, built1, n0, n1)
    if places is None:
        return FormulaPoints(why)
    model, inputs = built0
    try:
        sb = bound_symbolic(model, inputs, spec, {param: places}, precision=precision, name=name)
    except Exception as e:  # the program cannot be traced with the size as a symbol
        return FormulaPoints(f"tracing with {param} as a symbol failed: {one_line(e)}")
    try:
        rows = along(sb, param, list(sizes))  # type: ignore[arg-type]
    except Exception as e:  # a formula that does not evaluate: say so, trace every point
        return FormulaPoints(f"evaluating the formulas of {param} failed: {one_line(e)}")
    inside = sorted({int(n) for n, ok in zip(rows.values, rows.inside, strict=True) if ok})
    others = [n for n in inside if n != n0]
    if not others:
        where = sb.counts_region.specializations.get(param) if sb.counts_region else None
        if where:
            return FormulaPoints(f"the trace specializes {param} (a plain number at {where})")
        found = FormulaPoints("", sb, n0, rows)
        return FormulaPoints(
            f"the trace's formulas hold at no other {param} of the sweep "
            f"({found.outside(n1)} fails at {param}={n1})"
        )
    nc = n1 if n1 in others else others[-1]
    checked = trace(nc, built1 if nc == n1 else build(nc))
    row = rows.row(int(list(rows.values).index(nc)))
    wrong = _differs(row, checked)
    if wrong:
        return FormulaPoints(
            f"the formula from a trace at {param}={n0} differs from a trace at {param}={nc} "
            f"({wrong}): the size reaches the program other than through its tensors' dims",
            checked={nc: checked},
        )
    return FormulaPoints("", sb, n0, rows, {nc: checked})


def _differs(row: dict, b: Bound) -> str:
    """The first quantity of a formula row that differs from a traced Bound, as text."""
    for q in COUNTS:
        a, t = row[q], count_of(b, q)
        same = a == t if isinstance(t, int) else math.isclose(a, t, rel_tol=REL_TOL)
        if not same:
            return f"{q} {a} vs {t}"
    for q in TIMES:
        if not math.isclose(row[q], b.time(q), rel_tol=REL_TOL):
            return f"{q} {row[q]:.6g} s vs {b.time(q):.6g} s"
    return ""
