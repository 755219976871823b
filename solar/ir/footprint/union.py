"""Distinct elements of one storage base touched by several accesses.

Identical value sets count once; accesses whose guards are complementary (a triangle and its
complement) merge into one; strided boxes of a common mixed radix (slices, padding,
concatenation) are counted exactly by a digit-space box union; progressions every set shares
at its outside are factored out; a base spanning at most the ``mask`` limit is counted on a
boolean mask; otherwise the largest part is a lower bound. An indirect access's elements may
coincide with any others, so it adds nothing: the union is the exact union of the affine
accesses or the largest indirect minimum, whichever is larger (``exact=False``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import sympy

from solar.algebra.size import Size, expr_of, integer
from solar.ir.affine import Affine
from solar.ir.footprint.arith import bound_int, distinct_sorted, sized
from solar.ir.footprint.factors import Progression, materialize
from solar.ir.footprint.forms import access_set, flat_form, has_indirect, indirect_min
from solar.ir.footprint.record import Footprint
from solar.ir.footprint.sums import ValueSet
from solar.ir.limits import current_limits
from solar.ir.program import Program, Statement

Access = tuple[Statement, str, tuple[Affine, ...]]


def union_footprint(program: Program, accesses: Sequence[Access]) -> Footprint:
    """Distinct elements of one storage base touched by any of ``accesses``."""
    if not accesses:
        return Footprint(0, True)
    bases = {program.base(t) for _, t, _ in accesses}
    if len(bases) != 1:
        raise ValueError(f"union_footprint needs accesses of one storage base, got {bases}")
    numel = program.tensors[bases.pop()].numel
    indirect = [a for a in accesses if has_indirect(a[2])]
    if indirect:
        direct = union_footprint(program, [a for a in accesses if not has_indirect(a[2])])
        if direct.exact and direct.elements >= numel:  # everything: nothing more to add
            return Footprint(numel, True)
        lb = max(indirect_min(program, *a) for a in indirect)
        return Footprint(max(direct.elements, lb), False)
    uniq: dict[tuple, ValueSet] = {}
    for st, t, idx in _merge_complementary(program, accesses):
        s = access_set(program, st, t, idx)
        uniq.setdefault(s.key(), s)
    sets = [s for s in uniq.values() if s.count > 0 or not s.exact]
    if not sets:
        return Footprint(0, True)
    if len(sets) > 1 and any(s.exact and s.count >= numel for s in sets):
        return Footprint(numel, True)
    if len(sets) == 1 and sets[0].exact and _whole(sets[0].count, numel):
        return Footprint(numel, True)
    # else one set's count is at most the base (min below: a symbolic count that reaches the
    # whole base only at the traced point, a slice of a table, holds for every smaller size)
    fp = _union_sets(sets)
    return Footprint(min(fp.elements, numel), fp.exact)


def _whole(count: int, numel: int) -> bool:
    """An exact set's ``count`` is its whole base: as numbers, or with sizes as formulas
    equal at every size (a coincidence at the traced point is not decided here)."""
    if isinstance(count, Size) or isinstance(numel, Size):
        return sympy.expand(expr_of(count) - expr_of(numel)) == 0
    return count >= numel


def _merge_complementary(program: Program, accesses: Sequence[Access]) -> list[Access]:
    """Accesses of one affine form over one loop box whose guards differ only in one guard
    on a common expression, with intervals covering that expression's range (a triangle and
    its complement: ``tril``), merged into one access without that guard."""
    groups: dict[tuple, list[Access]] = {}
    for st, t, idx in accesses:
        form, size = flat_form(program, t, idx), program.tensors[t].itemsize
        key = (form, size, tuple((d.name, d.extent) for d in st.dims))
        groups.setdefault(key, []).append((st, t, idx))
    out = []
    for group in groups.values():
        merged = _merged(group) if len(group) > 1 else None
        out.extend([merged] if merged is not None else group)
    return out


def _merged(group: list[Access]) -> Access | None:
    """The access of ``group`` (see :func:`_merge_complementary`) without its split guard,
    or None."""
    first = group[0][0]
    for g in first.guards:
        rest = [h for h in first.guards if h != g]
        intervals = []
        for st, _, _ in group:
            split = [h for h in st.guards if h.expr == g.expr]
            if len(split) != 1 or set(st.guards) - {split[0]} != set(rest):
                break
            intervals.append((bound_int(split[0].lo), bound_int(split[0].hi)))
        else:
            lo, hi = g.expr.bounds({d.name: d.extent for d in first.dims})
            reach = lo
            for a, b in sorted(intervals):
                if a > reach:
                    break
                reach = max(reach, b)
            if reach > hi:
                st, t, idx = group[0]
                return replace(st, guards=tuple(rest)), t, idx
    return None


def _union_sets(sets: Sequence[ValueSet]) -> Footprint:
    """Distinct values in a union of value sets (exact, or a lower bound)."""
    if len(sets) == 1:
        return Footprint(sets[0].count, sets[0].exact)
    n = _grid_union(sets)
    if n is not None:
        return Footprint(n, True)
    split = _common_outer(sets)
    if split is not None:
        outer, inner = split
        fp = _union_sets(inner)
        return Footprint(outer * fp.elements, fp.exact)
    lb = max(s.count for s in sets)
    lo = min(s.const for s in sets)
    hi = max(s.const + sum(f.diam for f in s.factors) for s in sets)
    mask_limit = current_limits().mask
    if hi - lo + 1 <= mask_limit:  # numpy: symbolic sizes here are specialized (int())
        lo, hi = int(lo), int(hi)
        mask = np.zeros(hi - lo + 1, dtype=bool)
        exact = True
        for s in sets:
            v = materialize(s.factors, mask_limit) if s.exact else None
            if v is None:
                exact = False
                continue
            mask[v + (int(s.const) - lo)] = True
        return Footprint(max(int(mask.sum()), lb), exact)
    return Footprint(lb, False)


def _common_outer(sets: Sequence[ValueSet]) -> tuple[int, list[ValueSet]] | None:
    """Factor a union through the progressions every set shares at its outside: with ``B``
    dividing their steps and every set's remaining part (its offset from the smallest start
    included) shorter than ``B``, ``|∪ (c_i + I_i + O)| = |O| · |∪ (c_i - c + I_i)|`` (each
    element splits uniquely into a multiple of ``B`` and a rest below ``B``). Returns
    ``(|O|, the inner sets)`` or None."""
    common = set.intersection(
        *({f.key() for f in s.factors if isinstance(f, Progression)} for s in sets)
    )
    c0 = min(s.const for s in sets)
    for block in sorted({k[1] for k in common}):
        outer = {k for k in common if k[1] >= block}
        if any(k[1] % block for k in outer):
            continue
        inner = []
        for s in sets:
            keep = tuple(f for f in s.factors if f.key() not in outer)
            if s.const - c0 + sum(f.diam for f in keep) >= block:
                break
            inner.append(ValueSet(s.const - c0, keep))
        else:
            return math.prod(k[2] for k in outer), inner
    return None


def _grid_union(sets: Sequence[ValueSet]) -> int | None:
    """Exact size of a union of strided boxes sharing one mixed radix (slices of a tensor)."""
    if not all(s.exact and all(isinstance(f, Progression) for f in s.factors) for s in sets):
        return None
    steps = distinct_sorted([1, *(f.step for s in sets for f in s.factors)])  # type: ignore[attr-defined]
    if any(b % a for a, b in zip(steps, steps[1:], strict=False)):
        return None
    radix = [b // a for a, b in zip(steps, steps[1:], strict=False)] + [None]
    boxes = []
    for s in sets:
        box = _digit_box(s, steps, radix)
        if box is None:
            return None
        boxes.append(box)
    bounds = [[b[t][i] for b in boxes for i in (0, 1)] for t in range(len(steps))]
    if any(sized(x) for x in bounds):
        return _grid_volume_sized(boxes, [distinct_sorted(x) for x in bounds])
    cuts = [np.unique(x) for x in bounds]
    if math.prod(c.size - 1 for c in cuts) > current_limits().grid:
        return None
    grid = np.zeros([c.size - 1 for c in cuts], dtype=bool)
    for b in boxes:
        grid[
            tuple(
                slice(int(np.searchsorted(c, lo)), int(np.searchsorted(c, hi)))
                for c, (lo, hi) in zip(cuts, b, strict=True)
            )
        ] = True
    vol = grid.astype(np.int64)
    for c in cuts:
        vol = np.tensordot(np.diff(c).astype(np.int64), vol, axes=([0], [0]))
    return int(vol)


def _grid_volume_sized(boxes: list, cuts: list[list[int]]) -> int | None:
    """:func:`_grid_union`'s count when box bounds are symbolic sizes: the same cells (each
    cut is a distinct expression, in the order decided at the traced sizes), their widths
    and the volume kept as expressions."""
    if math.prod(len(c) - 1 for c in cuts) > current_limits().grid:
        return None
    where = [{expr_of(x): i for i, x in enumerate(c)} for c in cuts]
    grid = np.zeros([len(c) - 1 for c in cuts], dtype=bool)
    for b in boxes:
        grid[
            tuple(
                slice(w[expr_of(lo)], w[expr_of(hi)]) for w, (lo, hi) in zip(where, b, strict=True)
            )
        ] = True
    vol = grid.astype(object) * 1
    for c in cuts:
        widths = np.empty(len(c) - 1, dtype=object)
        widths[:] = [b - a for a, b in zip(c, c[1:], strict=False)]
        vol = np.tensordot(widths, vol, axes=([0], [0]))
    return integer(vol.item() if isinstance(vol, np.ndarray) else vol)


def _digit_box(s: ValueSet, steps: list[int], radix: list[int | None]) -> list | None:
    """``s`` as a box of digit ranges in the mixed radix; a progression longer than its digit
    (merged rows: ``{0..k·r}`` at step ``t``) spills whole rows into the next digit. None when
    ``s`` is not such a box."""
    if s.const < 0:
        return None
    rest, digits = s.const, []
    for r in radix:
        d, rest = (rest % r, rest // r) if r else (rest, 0)
        digits.append(d)
    span = [1] * len(steps)
    for f in s.factors:
        i, n = steps.index(f.step), f.n  # type: ignore[attr-defined]
        while radix[i] is not None and digits[i] + n > radix[i]:
            r = radix[i]
            if digits[i] or n % r or span[i] != 1:
                return None
            span[i], n, i = r, n // r, i + 1
        if span[i] != 1:
            return None
        span[i] = n
    return [(d, d + n) for d, n in zip(digits, span, strict=True)]
