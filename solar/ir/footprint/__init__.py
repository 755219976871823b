"""Footprints: how many distinct storage elements an affine access touches.

An access ``T[e_0, ..., e_k]`` of a statement reads (or writes) storage offset
``F(x) = offset + Σ_d stride_d · e_d(x)`` of ``T``'s storage base (a view's strides and offset,
or the row-major strides of a plain tensor) for every executed instance ``x`` of the loop box
``0 <= x_i < extent_i`` that satisfies all guards ``lo <= g(x) < hi``. Its footprint is the
number of distinct values of ``F`` over those instances. Every number here is an *exact* count or
a *proven lower bound* (``exact=False``), never more: the bounds built on them must stay below
reality.

Method (all integer arithmetic; nothing enumerates a large set), one module a step:

1. :mod:`~solar.ir.footprint.domain`: guards on one loop dim shrink that dim's range; loop
   dims joined by a common multi-dim guard form a *group*. Groups are independent, so the value
   set of ``F`` is the Minkowski sum ``c + Σ_g S_g`` of one set per group.
2. :mod:`~solar.ir.footprint.factors`: the sets are progressions, listed values or opaque
   counts; :mod:`~solar.ir.footprint.groups` computes a guarded group's set (an interval-cut
   progression, an enumeration of the short dims with the longest solved as an interval, or a
   sub-box lower bound) and :mod:`~solar.ir.footprint.segments` unions of progressions;
   with symbolic sizes, :mod:`~solar.ir.footprint.sized` walks the short plain dims and keeps
   the long dim's interval as expressions (the same answers, as formulas), and
   :mod:`~solar.ir.footprint.rows` gives a two-dim group with unit guard coefficients (a
   causal triangle, a band) in closed form: rows piecewise linear, lengths summed as series.
3. :mod:`~solar.ir.footprint.sums`: the sets are summed smallest scale first (merged
   progressions, injective sums, exact sums of small sets, Cauchy–Davenport lower bounds).
4. :mod:`~solar.ir.footprint.forms`: the footprint of one access, never above the base's numel
   (accesses are assumed in bounds); :mod:`~solar.ir.footprint.union` several accesses of one
   base; :mod:`~solar.ir.footprint.counts` executed instances and distinct tuples.

Each path has a size limit (:class:`solar.ir.limits.Limits`: ``enum``, ``mask``, ``grid``,
``segments``), read from the context (``with solar.ir.limits.limits(enum=...):``); the memo
caches key on the limits in force.

Indirect (data-dependent) index entries: the elements such an access touches depend on the
index data, so only the provable minimum is counted, with ``exact=False``: the entry is taken
as one fixed value (all indices equal), i.e. the footprint of the access with the indirect
entries dropped (:func:`flat_form` gives them stride 0). That is a lower bound whenever the
tensor's layout maps distinct indices to distinct elements (any plain tensor, any
non-overlapping view): then the touched elements determine the affine sub-index, whose
distinct values are what is counted. For an overlapping view the minimum claimed is one
element. In a union, an indirect access's elements may coincide with any others, so it adds
nothing: the union counts the exact union of the affine accesses or the largest indirect
minimum, whichever is larger (``exact=False``).
"""

from __future__ import annotations

from solar.ir.footprint.counts import distinct_tuples, guarded_count, statement_instances
from solar.ir.footprint.forms import access_footprint, flat_form, has_indirect, injective_layout
from solar.ir.footprint.record import Footprint
from solar.ir.footprint.union import union_footprint
from solar.ir.limits import limits as enumeration_limits

__all__ = [
    "Footprint",
    "access_footprint",
    "distinct_tuples",
    "enumeration_limits",
    "flat_form",
    "guarded_count",
    "has_indirect",
    "injective_layout",
    "statement_instances",
    "union_footprint",
]
